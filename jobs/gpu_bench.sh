#!/bin/bash
# gpu_bench.sh — microddp's GPU step on this card, against the GEMM floor and against PyTorch doing
# the same work on the same card, in one table (docs/gpu.md, "The GPU benchmark"). Run it after
# jobs/gpu_check.sh said PASS: it uses the check's build (jobs/lib/gpu_build.sh: the same directory,
# configured the same way), and builds it where nothing was built yet.
#
# For each model (width / depth / global batch, optimizer) x precision (fp32, tf32, bf16) x CUDA graph
# (off, on), one `train --device cuda` at np 1 on nccl, and from its --metrics summary:
#   step_ms      median step (steady state: the first step is excluded by the summary)
#   fwd+bwd_ms   median forward + backward (device marks)
#   data_ms      median time the step waited for its batch (exposed)
#   floor_ms     the GEMM floor: exactly the GEMMs of one forward+backward, back to back, on this card
#                at this precision (`bench compute --device cuda --precision P`, its "sgemm only" row,
#                "gemm-bf16 only" in bf16); fwd+bwd / floor says how close the step's compute gets to it
#   MFU          the model's FLOPs per step (as `bench compute` counts them: 2 per weight and row
#                forward, 4 backward) / step time / this card's GEMM peak at this precision, measured
#                here by the same command on one large square GEMM (PEAK_SHAPE)
# and, when `python3 -c 'import torch'` works here, PyTorch on the same model from
# jobs/lib/pytorch_mlp_step.py, like for like with the row:
#   pt_ms        PyTorch's step at the same precision and the same mode (eager, or the step replayed as
#                one CUDA graph), doing what our step does: the batch made on the GPU (outside the
#                graph), forward, backward, the gradient's norm, the optimizer with the same settings
#                (lr, momentum, Adam's betas and eps), the loss read by the host; the same clock (the
#                host's wall time per step, median)
#   ours/pt      step_ms / pt_ms
#   pt_core_ms   PyTorch's forward + backward + optimizer alone (no batch, norm or loss read), for scale
# What our step still does on top at np 1 is printed under the table (a one-rank NCCL all-reduce of
# the gradients and of the verdict, the update gate; in bf16 autocast keeps PyTorch's activations in
# bf16, ours stay fp32).
# Then, on a node with >= 2 GPUs (`microddp devices --count`), the collectives on GPU memory at
# np = the number of GPUs, one GPU per rank: `bench collectives --memory device` for nccl, nccl-ring
# and mpi (nccl-tests-style table: time, algbw, busbw per size, #wrong, avg busbw per backend); every
# result is checked exactly and a wrong one fails the script.
#
# Usage: bash jobs/gpu_bench.sh [--emulated]
#   --emulated (or MICRODDP_GPU_BENCH_EMULATED=1): the emulated device of the cuda-emu build, tiny
#   sizes: the table appears with every column filled from real runs, timings labelled "emulated"
#   (they prove the script and the plumbing, not speed); CI runs it so. The emulated node has 2 GPUs
#   (CUDA_EMU_NODE_GPUS, default 2 here) so the collectives section runs too, on 4-64 KiB.
# Settings: the build's (jobs/lib/gpu_build.sh: MICRODDP_GPU_BUILD, MICRODDP_GPU_PREBUILT, ...),
#   MICRODDP_GPU_BENCH_STEPS (steps per run; default 60, emulated 6), MPIEXEC (default mpiexec).
# Exit code: 0 the table was printed; 1 a run failed (its output is shown); 3 setup incomplete (a
# tool missing, CMake could not configure, the build failed); 77 no GPU visible: nothing measured.
set -uo pipefail

EMULATED="${MICRODDP_GPU_BENCH_EMULATED:-0}"
for arg in "$@"; do
  case "$arg" in
    --emulated) EMULATED=1 ;;
    *) echo "usage: $0 [--emulated]" >&2; exit 2 ;;
  esac
done
SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/gpu_build.sh
source "${SRC_DIR}/jobs/lib/gpu_build.sh"
gpu_build_init "${EMULATED}" "${SRC_DIR}"
BUILD_DIR="${GPU_BUILD_DIR}"
# The optimizers' settings, given to both sides (train and PyTorch) so they are the same by
# construction: Adam's betas 0.9/0.999 and eps 1e-8 are both sides' defaults.
LR=0.001
SGD_MOMENTUM=0.9
if [[ ${EMULATED} == 1 ]]; then
  STEPS="${MICRODDP_GPU_BENCH_STEPS:-6}"
  # width depth batch optimizer: tiny stand-ins of the three models below.
  MODELS=("16 2 32 adam" "32 2 32 adam" "32 1 64 sgd")
  PEAK_SHAPE="64 1 64"
  # 4 KiB .. 64 KiB x 16: three sizes, a second or so on the emulated device.
  COLL_SIZES=(--min-bytes 4K --max-bytes 64K --factor 16 --iters 2 --warmup 1)
  export CUDA_EMU_NODE_GPUS="${CUDA_EMU_NODE_GPUS:-2}"
  label="emulated"
else
  STEPS="${MICRODDP_GPU_BENCH_STEPS:-60}"
  # The default model, a wide one, and a large-batch one.
  MODELS=("128 16 256 adam" "1024 16 1024 adam" "2048 8 4096 sgd")
  PEAK_SHAPE="8192 1 8192"  # width depth batch: two 8192^3 GEMMs forward, four backward
  # nccl-tests' range, in steps of 4: 8 B (latency) to 1 GiB (NVLink's busbw plateau is above 256 MiB).
  COLL_SIZES=(--min-bytes 8 --max-bytes 1G --factor 4 --iters 20 --warmup 5)
  label="measured"
fi
MPIEXEC="${MPIEXEC:-mpiexec}"
BIN="${BUILD_DIR}/microddp"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

echo "# microddp gpu_bench (${label}; emulated timings prove the plumbing, not speed)"
echo "# date   : $(date -Iseconds)"
echo "# commit : $(git -C "${SRC_DIR}" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "# build  : ${BUILD_DIR}"

# ---- the build: gpu_check.sh's recipe (configure when the directory holds none yet) ------------
missing=()
for tool in "${GPU_BUILD_TOOLS[@]}" "${MPIEXEC}" python3; do
  command -v "${tool}" >/dev/null 2>&1 || missing+=("${tool}")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "# setup incomplete: missing ${missing[*]} (Debian: ./setup.sh deps; clusters: load the modules; nvcc: CUDACXX)"
  exit 3
fi
if [[ ! -f ${BUILD_DIR}/CMakeCache.txt || ${GPU_PREBUILT} == 1 ]]; then
  if ! gpu_configure "${tmp}/configure.log"; then
    tail -n 25 "${tmp}/configure.log"
    echo "# setup incomplete: CMake could not configure (above: what is missing); Debian: ./setup.sh deps"
    exit 3
  fi
fi
gpu_build "${MICRODDP_GPU_CHECK_BUILD_TIMEOUT_S:-3600}" microddp ||
  { echo "# setup incomplete: the build failed (above; jobs/gpu_check.sh says more)"; exit 3; }
gpu_mpiexec_flags "${MPIEXEC}"
MPI_FLAGS=("${GPU_MPIEXEC_FLAGS[@]}")

# ---- the GPUs the CUDA runtime sees ------------------------------------------------------------
if ! devices_out=$("${BIN}" devices 2>&1); then
  echo "${devices_out}"
  echo "# FAIL: the CUDA runtime cannot use the GPUs (above: the driver and runtime versions)"
  exit 1
fi
echo "${devices_out}" | sed 's/^#* */# /' | head -3
NGPUS=$("${BIN}" devices --count 2>/dev/null || echo 0)
if [[ -z ${NGPUS} || ${NGPUS} == 0 ]]; then
  echo "# verdict: SKIPPED-not-passed — no CUDA device visible here: the build is ready, nothing was measured"
  exit 77
fi

# json FILE EXPR: a value from the last JSON line of FILE whose "type" is "summary" (python3 reads it).
json() {
  python3 - "$1" "$2" <<'PY'
import json, sys
summary = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][-1]
print(eval(sys.argv[2], {}, {"s": summary}))
PY
}
fail() { echo "# FAIL: $1"; exit 1; }

# floor PREC W D B -> "ms gflops" of the GEMM-floor row ("sgemm only" / "gemm-bf16 only") of bench
# compute on this card.
floor() {
  local out="${tmp}/bench.txt"
  "${MPIEXEC}" -np 1 "${MPI_FLAGS[@]}" "${BIN}" bench compute --device cuda --precision "$1" --width "$2" --depth "$3" \
    --batch "$4" --iters 5 --warmup 2 >"$out" 2>&1 || { cat "$out" >&2; return 1; }
  awk '$2 == "only" {print $3, $4}' "$out"
}
declare -A PEAK
for prec in fp32 tf32 bf16; do
  read -r pw pd pb <<<"${PEAK_SHAPE}"
  r=$(floor "$prec" "$pw" "$pd" "$pb") || fail "bench compute --device cuda (${prec} peak)"
  PEAK[$prec]=$(echo "$r" | awk '{print $2}')
  echo "# GEMM peak ${prec}: ${PEAK[$prec]} GF/s (bench compute, width ${pw}, batch ${pb})"
done
echo "# steps per run: ${STEPS}; medians of the steady state; np 1, --comm nccl, synthetic data made on the GPU"
echo "# optimizers, both sides: adam lr ${LR} (betas 0.9/0.999, eps 1e-8); sgd lr ${LR} momentum ${SGD_MOMENTUM}"
printf "# %-16s %-5s %-5s %9s %10s %8s %9s %7s %9s %8s %10s\n" "model w/d/b opt" "prec" "graph" "step_ms" \
  "fwd+bwd_ms" "data_ms" "floor_ms" "MFU" "pt_ms" "ours/pt" "pt_core_ms"
pt_note=""
for m in "${MODELS[@]}"; do
  read -r W D B OPT <<<"$m"
  opt_args=(--optimizer "$OPT" --lr "${LR}")
  [[ ${OPT} == sgd ]] && opt_args+=(--momentum "${SGD_MOMENTUM}")
  # PyTorch on the same model, once per model (all its variants in one process).
  pt="${tmp}/pt.json"
  python3 "${SRC_DIR}/jobs/lib/pytorch_mlp_step.py" --width "$W" --depth "$D" --batch "$B" "${opt_args[@]}" \
    --steps "${STEPS}" >"$pt" 2>"${tmp}/pt.err" || echo '{"available": false, "why": "the script failed"}' >"$pt"
  pt_row() { python3 -c "import json,sys; d=json.load(open('$pt')); r=d.get('rows',{}); print('%.3f' % r['$1'] if '$1' in r else 'n/a')"; }
  pt_available=$(python3 -c "import json; print(json.load(open('$pt'))['available'])")
  for prec in fp32 tf32 bf16; do
    r=$(floor "$prec" "$W" "$D" "$B") || fail "bench compute --device cuda ${prec} ${m}"
    read -r floor_ms floor_gfs <<<"$r"
    for graph in off on; do
      metrics="${tmp}/m.jsonl"
      out="${tmp}/train.txt"
      "${MPIEXEC}" -np 1 "${MPI_FLAGS[@]}" "${BIN}" train --device cuda --comm nccl --width "$W" --depth "$D" \
        --global-batch "$B" "${opt_args[@]}" --steps "${STEPS}" --log-every "${STEPS}" --cuda-graph "$graph" \
        --precision "$prec" --metrics "$metrics" >"$out" 2>&1 || { cat "$out"; fail "train ${prec} graph ${graph} ${m}"; }
      step=$(json "$metrics" "'%.3f' % s['median']['step_ms']")
      fb=$(json "$metrics" "'%.3f' % (s['median']['forward_ms'] + s['median']['backward_ms'])")
      data=$(json "$metrics" "'%.3f' % s['median']['data_ms']")
      # FLOPs per step = the floor's rate x its time (bench compute counts the model's FLOPs).
      mfu=$(python3 -c "f = ${floor_gfs} * 1e9 * ${floor_ms} * 1e-3; print('%.1f%%' % (100 * f / (${step} * 1e-3) / (${PEAK[$prec]} * 1e9)))")
      pt_ms=n/a; ratio=n/a; core=n/a
      if [[ ${pt_available} == True ]]; then
        mode=eager; [[ $graph == on ]] && mode=graph
        pt_ms=$(pt_row "${mode}_${prec}"); core=$(pt_row "core_${mode}_${prec}")
        ratio=$(python3 -c "print('%.2fx' % (${step} / ${pt_ms}))" 2>/dev/null || echo n/a)
      fi
      printf "  %-16s %-5s %-5s %9s %10s %8s %9s %7s %9s %8s %10s\n" "${W}/${D}/${B} ${OPT}" "$prec" "$graph" \
        "$step" "$fb" "$data" "$floor_ms" "$mfu" "$pt_ms" "$ratio" "$core"
    done
  done
  if [[ ${pt_available} == True ]]; then
    pt_note=$(python3 -c "import json; d=json.load(open('$pt')); print('torch %s on %s, %s' % (d['torch'], d['device'], d['optimizer']))")
  else
    echo "#   PyTorch: not available ($(python3 -c "import json; print(json.load(open('$pt'))['why'])"))"
  fi
done
echo "# MFU = model FLOPs per step / step time / this card's GEMM peak at that precision (above); floor_ms: the step's GEMMs alone"
echo "# pt_ms: PyTorch${pt_note:+ (${pt_note})} doing our step's work at the same precision, eager (graph off) or"
echo "#   replayed as one CUDA graph (graph on): the batch made on the GPU, forward, backward, the gradient's norm,"
echo "#   the same optimizer settings, the loss read by the host; pt_core_ms: its forward+backward+optimizer alone"
echo "# ours on top of pt_ms at np 1: a one-rank NCCL all-reduce of the gradients and of the 3-value verdict, the"
echo "#   update gate (skip a non-finite step, clip factor); bf16: PyTorch's autocast keeps activations in bf16, ours fp32"

# ---- collectives on GPU memory, np = GPUs on this node ------------------------------------
if [[ ${NGPUS} -ge 2 ]]; then
  echo "# collectives on GPU memory (${label}): bench collectives --memory device, np ${NGPUS}, one GPU per rank"
  out="${tmp}/collectives.txt"
  "${MPIEXEC}" -np "${NGPUS}" "${MPI_FLAGS[@]}" "${BIN}" bench collectives --backends nccl,nccl-ring,mpi \
    --memory device "${COLL_SIZES[@]}" >"$out" 2>&1 || { cat "$out"; fail "bench collectives --memory device, np ${NGPUS}"; }
  cat "$out"
  # Every result is checked exactly: a wrong element or a backend not on GPU memory fails the script.
  grep -q "^# Out of bounds values : 0 OK" "$out" || fail "bench collectives: wrong results"
  grep -q "^# memory: nccl=gpu nccl-ring=gpu mpi=gpu" "$out" || fail "bench collectives: not on GPU memory"
else
  echo "# collectives on GPU memory: skipped (${NGPUS} GPU(s) visible here; the section needs >= 2)"
fi
