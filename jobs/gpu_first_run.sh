#!/bin/bash
# gpu_first_run.sh — the one command for a run on a GPU that microddp has not seen yet (docs/gpu.md,
# "On the next GPU"): jobs/gpu_check.sh, then, if it said PASS, jobs/gpu_bench.sh on the
# same build (jobs/lib/gpu_build.sh), each log written whole to RESULTS_DIR, the wall time of each
# printed, and the lines a reader must look at gathered at the end: the verdict, every cuBLASLt
# problem the real library refused (run unfused instead), the benchmark's table.
#
# Run: bash jobs/gpu_first_run.sh               (a GPU node; builds in build-gpu first)
#      MICRODDP_GPU_PREBUILT=1 MICRODDP_GPU_BUILD=<dir> bash jobs/gpu_first_run.sh
#                                               (a build brought from a machine with the development
#                                               packages, at the same absolute path)
#      sbatch jobs/gpu_first_run.sh             (through SLURM; the lines below)
#      bash jobs/gpu_first_run.sh --emulated    (no GPU: the emulated device; proves the script)
#SBATCH --job-name=microddp-gpu-first-run   # shows in squeue
#SBATCH --nodes=1                           # one node: the check covers intra-node NCCL
#SBATCH --ntasks=1                          # the scripts launch their own MPI ranks
#SBATCH --gpus-per-node=1                   # 1 is enough; 2 or more add NCCL between GPUs
#SBATCH --cpus-per-task=16                  # build parallelism and one core per rank
#SBATCH --time=00:30:00                     # the estimate is under 10 minutes after the build
#SBATCH --output=gpu_first_run-%j.out       # one log per job
# Settings: RESULTS_DIR [results/gpu_first_run-<date>], and those of the two scripts.
# Exit code: gpu_check.sh's when it did not say PASS (1, 3, 77), else gpu_bench.sh's.
set -uo pipefail

emulated=()
for arg in "$@"; do
  case "$arg" in
    --emulated) emulated=(--emulated) ;;
    *) echo "usage: $0 [--emulated]" >&2; exit 2 ;;
  esac
done
SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RESULTS_DIR="${RESULTS_DIR:-${SRC_DIR}/results/gpu_first_run-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "${RESULTS_DIR}" || { echo "error: cannot create RESULTS_DIR=${RESULTS_DIR}" >&2; exit 2; }

# run_logged NAME SCRIPT: runs it with its output on the terminal and in RESULTS_DIR/NAME.log.
run_logged() {
  local name="$1" script="$2" start rc
  start=$(date +%s)
  bash "${script}" "${emulated[@]}" 2>&1 | tee "${RESULTS_DIR}/${name}.log"
  rc=${PIPESTATUS[0]}
  echo "# ${name}: exit ${rc} after $(($(date +%s) - start)) s (log: ${RESULTS_DIR}/${name}.log)"
  return "${rc}"
}

total_start=$(date +%s)
run_logged gpu_check "${SRC_DIR}/jobs/gpu_check.sh"
check_rc=$?
bench_rc=0
if [[ ${check_rc} == 0 ]]; then
  run_logged gpu_bench "${SRC_DIR}/jobs/gpu_bench.sh"
  bench_rc=$?
else
  echo "# gpu_bench: not run (gpu_check did not say PASS)"
fi

echo "# ---- summary (${RESULTS_DIR}) ----"
grep -h "^# verdict" "${RESULTS_DIR}"/gpu_check.log
refused=$(grep -h "has no algorithm for" "${RESULTS_DIR}"/*.log | sed 's/^\[[^]]*\] //' | sort -u)
if [[ -n ${refused} ]]; then
  echo "# cuBLASLt refused these problems (they ran unfused; record them in docs/gpu.md):"
  echo "${refused}" | sed 's/^/#   /'
else
  echo "# cuBLASLt refused no fused problem"
fi
if [[ -f ${RESULTS_DIR}/gpu_bench.log ]]; then
  grep -hE "^(# (model|GEMM peak|steps per)|  [0-9])" "${RESULTS_DIR}/gpu_bench.log"
fi
echo "# wall time: $(($(date +%s) - total_start)) s"
[[ ${check_rc} == 0 ]] || exit "${check_rc}"
exit "${bench_rc}"
