#!/bin/bash
# nccl_hung_peer.sh — a GPU training run over NCCL whose peer hangs (SIGSTOP: it never dies, so no
# socket closes and nothing fails; NCCL's kernel on the other rank waits forever) must end in
# --comm-timeout with the communicator aborted, eagerly and with the step replayed as a CUDA graph:
# the host never blocks in cudaStreamSynchronize on a stream that waits for a hung collective.
# On the emulated device a hung peer's NCCL operation holds its stream until ncclCommAbort, as on a GPU.
# Usage: nccl_hung_peer.sh <microddp> <mpiexec> [mpiexec flags...]
# Needs 2 GPUs (one per rank): exits 77 (skipped) with fewer.
# Job handling (and Open MPI 4.1's occasional launcher deadlock after MPI_Abort): tests/fault_lib.sh.
set -u
bin="$1"; mpiexec="$2"; shift 2
flags=("$@")
. "$(dirname "$0")/../../fault_lib.sh"
gpus=$("$bin" devices --count 2>/dev/null || echo 0)
if [ "${gpus:-0}" -lt 2 ]; then echo "skipped: $gpus GPU(s) visible, 2 needed (one per rank)"; exit 77; fi
failures=0; cases=0
timeout_s=5
report='ncclCommAbort'

for graph in off on; do
  name="sigstop/cuda-graph-$graph"
  cases=$((cases + 1))
  # Stopped once the first step line is out (inside training, not in MPI or NCCL start-up). No
  # periodic checks: only the step's own collectives run, so the NCCL timeout is what must fire.
  fault_run 120 "$report" --sigstop microddp '^ +1 +[0-9]' \
      "$mpiexec" -np 2 "${flags[@]}" "$bin" train --device cuda --comm nccl --cuda-graph "$graph" \
      --steps 100000000 --width 64 --depth 4 --global-batch 64 --log-every 1 --check-every 0 \
      --sync-check-every 0 --comm-timeout "$timeout_s"
  if [ "$FAULT_RC" = "timeout" ]; then
    echo "FAIL $name: still running after 120 s ($FAULT_LEFT live ranks): the survivor blocked on its stream"
    fault_show; failures=$((failures + 1)); continue
  fi
  if [ "$FAULT_RC" = "0" ]; then echo "FAIL $name: exit 0 (expected non-zero)"; failures=$((failures + 1)); continue; fi
  if ! grep -q "$report" "$FAULT_LOG" || ! grep -q -- "--comm-timeout" "$FAULT_LOG"; then
    echo "FAIL $name: no report of the timeout and the abort"; fault_show; failures=$((failures + 1)); continue
  fi
  if [ "$graph" = on ] && ! grep -q "cuda graph *: on" "$FAULT_LOG"; then
    echo "FAIL $name: the step was not replayed as a graph"; fault_show; failures=$((failures + 1)); continue
  fi
  if [ "$FAULT_LEFT" -gt 0 ]; then echo "FAIL $name: $FAULT_LEFT rank(s) still alive"; failures=$((failures + 1)); continue; fi
  # Which wait saw it depends on where the peer stopped: the step's wait for the compute stream (the
  # step's collectives, eager or replayed: "did not finish within") or, between steps, the run's
  # stop-flag all-reduce ("not complete after"); both poll, and both must end in the timeout.
  echo "ok   $name (exit $FAULT_RC after $FAULT_TOOK s): $(grep -m1 -oE "(did not finish within|not complete after) [0-9.]+ s" "$FAULT_LOG")"
done

echo "$((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
