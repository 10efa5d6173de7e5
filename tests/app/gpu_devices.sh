#!/bin/bash
# gpu_devices.sh — which GPU a rank uses and what happens when there is none, one shared, or a
# broken driver: end to end through `microddp`, on the emulated device (tests/cuda_emu), whose node
# GPUs, visible devices and driver failures come from the environment (docs/cuda_emu.md).
# Usage: gpu_devices.sh <microddp> <one_gpu_per_rank.sh> <nccl: 0|1> <mpiexec> [mpiexec flags...]
# Cases (each under a timeout; a hang fails the test):
#   * `devices` lists the visible GPUs with distinct UUIDs; none visible is "0", exit 0;
#   * no driver installed at all (a CPU machine with a CUDA build) is "0 devices", exit 0; a driver
#     older than the runtime is an error naming both versions (exit 1), also for `train` under
#     `--device auto`, which must never fall back to the CPU silently;
#   * 2 ranks on 1 GPU with --device auto train on the GPU over --comm mpi, and the header says why;
#     an explicit --comm nccl there is refused (exit 2) naming the ranks; the same 2 ranks each
#     seeing one GPU of their own (srun --gpus-per-task=1) train over nccl;
#   * an NCCL older than 2.9.6 (NCCL_EMU_VERSION) trains without a CUDA graph and says why; --cuda-graph
#     on is refused;
#   * bench collectives measures the GPU backends on GPU memory; bench ddp --device cuda (bf16) runs
#     the strategies on the GPUs;
#   * analyze --device cuda and hooks --device cuda train on the GPUs over nccl: headers name the GPU,
#     the sweep runs on GPU memory, the verdict's peak is measured on the GPU, ranks agree; with no GPU
#     visible both refuse --device cuda (exit 2).
set -u
bin="$1"; wrap="$2"; have_nccl="$3"; shift 3
mpiexec="$1"; shift
mpi_flags=("$@")
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_re() {  # expect_re <description> <extended regex that must match a line of $out>
  if ! grep -qE -- "$2" <<<"$out"; then
    fail "$1: output lacks /$2/"; echo "$out" | tail -n 8 | sed 's/^/    /'; return
  fi
  ok "$1"
}
ok() { echo "ok   $*"; }
# run <timeout s> <env assignments...> -- <command...>: sets $out (stdout+stderr) and $rc.
run() {
  local limit=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  out=$(env "${envs[@]}" timeout "$limit" "$@" 2>&1); rc=$?
}
expect() {  # expect <description> <want rc> <text that must appear>
  if [ "$rc" -ne "$2" ]; then
    fail "$1: exit $rc, want $2"; echo "$out" | tail -n 8 | sed 's/^/    /'; return
  fi
  if ! grep -qF -- "$3" <<<"$out"; then
    fail "$1: output lacks '$3'"; echo "$out" | tail -n 8 | sed 's/^/    /'; return
  fi
  ok "$1"
}
unset MICRODDP_DEVICE CUDA_VISIBLE_DEVICES CUDA_EMU_FAIL_INIT CUDA_EMU_DRIVER_VERSION
train=(train --steps 3 --width 32 --depth 2 --global-batch 16 --log-every 1)

run 60 CUDA_EMU_NODE_GPUS=2 -- "$bin" devices
expect "devices: two GPUs listed" 0 "# devices: 2"
uuids=$(grep -o 'GPU-[0-9a-f-]*' <<<"$out" | sort -u | wc -l)
[ "$uuids" -eq 2 ] && ok "devices: two distinct UUIDs" || fail "devices: $uuids distinct UUIDs, want 2"
run 60 CUDA_EMU_NODE_GPUS=0 -- "$bin" devices
expect "devices: none visible" 0 "# devices: 0"

run 60 CUDA_EMU_FAIL_INIT=insufficient-driver CUDA_EMU_DRIVER_VERSION=0 -- "$bin" devices --count
expect "no driver installed: a CPU machine" 0 "0"
run 60 CUDA_EMU_FAIL_INIT=insufficient-driver CUDA_EMU_DRIVER_VERSION=12040 -- "$bin" devices
expect "old driver: an error naming both versions" 1 "driver 12.4, runtime 13.0"
run 120 CUDA_EMU_FAIL_INIT=insufficient-driver CUDA_EMU_DRIVER_VERSION=12040 -- "$bin" "${train[@]}" --device auto
expect "old driver: train --device auto does not fall back to the CPU" 1 "cudaErrorInsufficientDriver"

run 120 CUDA_EMU_NODE_GPUS=1 -- "$mpiexec" -n 2 "${mpi_flags[@]}" "$bin" "${train[@]}" --device auto
expect "2 ranks, 1 GPU, --device auto: on the GPU" 0 "compute    : cuda:0"
expect "2 ranks, 1 GPU, --device auto: over mpi" 0 "over mpi backend"

if [ "$have_nccl" = 1 ]; then
  # Only a build with NCCL has another default to give up (without NCCL, mpi is the default anyway).
  expect "2 ranks, 1 GPU, --device auto: the header says why mpi, not nccl" 0 "share one GPU"
  run 120 CUDA_EMU_NODE_GPUS=1 -- "$mpiexec" -n 2 "${mpi_flags[@]}" "$bin" "${train[@]}" --device cuda --comm nccl
  expect "2 ranks, 1 GPU, --comm nccl: refused naming the ranks" 2 "ranks 0 and 1 on host"
  run 120 CUDA_EMU_NODE_GPUS=2 -- "$mpiexec" -n 2 "${mpi_flags[@]}" "$wrap" "$bin" "${train[@]}" --device cuda --comm nccl
  expect "2 ranks each seeing one GPU (gpus-per-task=1): nccl" 0 "over nccl backend"
  # An NCCL older than 2.9.6 cannot be captured into a CUDA graph (the emulated NCCL then refuses a
  # captured call): --cuda-graph auto trains eagerly and says why, --cuda-graph on is refused.
  run 120 CUDA_EMU_NODE_GPUS=1 NCCL_EMU_VERSION=20905 -- "$bin" "${train[@]}" --device cuda --comm nccl
  expect "NCCL 2.9.5, --cuda-graph auto: eager, and the header says why" 0 \
      "cuda graph : off (--comm nccl: NCCL 2.9.5 cannot capture collectives into a CUDA graph"
  run 120 CUDA_EMU_NODE_GPUS=1 NCCL_EMU_VERSION=20905 -- "$bin" "${train[@]}" --device cuda --comm nccl --cuda-graph on
  expect "NCCL 2.9.5, --cuda-graph on: refused" 2 "NCCL 2.9.5 cannot capture collectives"
  run 120 CUDA_EMU_NODE_GPUS=1 NCCL_EMU_VERSION=20906 -- "$bin" "${train[@]}" --device cuda --comm nccl --cuda-graph on
  expect "NCCL 2.9.6, --cuda-graph on: graphed" 0 "cuda graph : on"
  run 300 CUDA_EMU_NODE_GPUS=2 -- "$mpiexec" -n 2 "${mpi_flags[@]}" "$bin" bench collectives --backends nccl,nccl-ring,mpi \
      --max-bytes 65536 --factor 16 --iters 2 --warmup 1
  expect "bench collectives: GPU backends on GPU memory" 0 "# memory: nccl=gpu nccl-ring=gpu mpi=host"
  expect "bench collectives: exact" 0 "Out of bounds values : 0 OK"
  # bench ddp on the GPU (one per rank, nccl by default), in bf16: the strategies side by side on
  # device buffers, every rank holding the same parameters after each variant.
  run 300 CUDA_EMU_NODE_GPUS=2 -- "$mpiexec" -n 2 "${mpi_flags[@]}" "$wrap" "$bin" bench ddp --device cuda --precision bf16 \
      --width 16 --depth 2 --global-batch 16 --steps 2 --rounds 1 --warmup 1 --strategies flat,overlap
  expect "bench ddp --device cuda: on the GPU over nccl" 0 "2 ranks, nccl backend, device cuda: cuda:0"
  expect "bench ddp --device cuda: bf16" 0 "# precision: bf16"
  expect "bench ddp --device cuda: ranks agree" 0 "# OK (all ranks hold identical parameters after every variant)"
  # analyze on the GPUs: fresh run of two strategies, the in-process sweep on GPU memory, the verdict
  # against this GPU's GEMM peak measured at the run's precision (a 32^3 GEMM: the emulated device
  # computes on the CPU).
  run 300 CUDA_EMU_NODE_GPUS=2 -- "$mpiexec" -n 2 "${mpi_flags[@]}" "$wrap" "$bin" analyze --device cuda \
      --precision bf16 --strategies flat,overlap --width 16 --depth 2 --global-batch 16 --steps 2 --warmup 1 \
      --fit-max-mb 0.01 --peak-gemm-size 32 --max-ranks 4
  expect "analyze --device cuda: header says the device" 0 "2 rank(s) x 1 GPU (device cuda), backend nccl"
  expect "analyze --device cuda: compute line names the GPU and precision" 0 "#   compute: cuda:0"
  expect "analyze --device cuda: bf16" 0 "; precision bf16"
  expect "analyze --device cuda: the sweep all-reduces GPU memory" 0 "in-process all-reduce sweep, 2 ranks, GPU memory"
  expect_re "analyze --device cuda: the peak is measured on the GPU at bf16" \
      "references: compute peak [0-9]+\.[0-9] GFLOP/s \(measured on cuda:0 .*: one 32\^3 bf16 GEMM, median of 5\); memory [0-9]+\.[0-9] GB/s \(measured on cuda:0"
  expect_re "analyze --device cuda: measured step times" "^  (flat|overlap) +[0-9]+\.[0-9]+"
  expect "analyze --device cuda: ranks agree" 0 "# OK: all 2 ranks hold identical parameters after the fresh run"
  if grep -qF "peak for" <<<"$out" || grep -qF "per thread" <<<"$out"; then
    fail "analyze --device cuda: a CPU peak in a GPU report"
  else
    ok "analyze --device cuda: no CPU peak in the report"
  fi
  # hooks on the GPUs: every collective's launch and completion, device times, ranks agree.
  run 300 CUDA_EMU_NODE_GPUS=2 -- "$mpiexec" -n 2 "${mpi_flags[@]}" "$wrap" "$bin" hooks --device cuda --tf32 \
      --width 16 --depth 2 --global-batch 16 --steps 2 --strategy bucketed --bucket-mb 0.001
  expect "hooks --device cuda: header says the device" 0 "over nccl, 2 ranks, device cuda"
  expect "hooks --device cuda: compute line names the GPU" 0 "# compute: cuda:0"
  expect "hooks --device cuda: --tf32 reaches the GPU's GEMMs" 0 "tf32 on); precision tf32"
  expect "hooks --device cuda: says which times are the GPU's" 0 "# on the GPU: grad_ready and launch are when the host queued them"
  expect_re "hooks --device cuda: collectives complete, with times" "^ +[0-9]+\.[0-9]{3}  complete +layer_00\.weight \([0-9]+ us after launch\)"
  expect_re "hooks --device cuda: gradients ready, with times" "^ +-?[0-9]+\.[0-9]{3}  grad_ready +layer_02\.weight \(#1\)"
  expect "hooks --device cuda: ranks agree" 0 "# OK: all 2 ranks hold identical parameters after 2 steps"
fi
# No GPU visible: analyze and hooks refuse --device cuda with the agreed message (exit 2).
run 120 CUDA_EMU_NODE_GPUS=0 -- "$mpiexec" -n 2 "${mpi_flags[@]}" "$bin" analyze --device cuda --width 8 --depth 1 --steps 1
expect "analyze --device cuda, no GPU: refused" 2 "no CUDA device visible"
run 120 CUDA_EMU_NODE_GPUS=0 -- "$mpiexec" -n 2 "${mpi_flags[@]}" "$bin" hooks --device cuda --width 8 --depth 1
expect "hooks --device cuda, no GPU: refused" 2 "no CUDA device visible"

if [ "$failures" -ne 0 ]; then echo "$failures case(s) failed"; exit 1; fi
echo "all cases passed"
