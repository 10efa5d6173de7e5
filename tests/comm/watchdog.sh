#!/bin/bash
# watchdog.sh — no silent hangs: a rank that skips a collective, or a rank that is stopped with
# SIGSTOP, makes every rank end within the timeout, with a report naming the collective.
# Usage: watchdog.sh <watchdog_skip_collective> <microddp> <mpiexec> [mpiexec preflags...]
# Job handling (and Open MPI 4.1's occasional launcher deadlock after MPI_Abort): tests/fault_lib.sh.
set -u
skip_bin="$1"; microddp="$2"; mpiexec="$3"; shift 3
flags=("$@")
. "$(dirname "$0")/../fault_lib.sh"
failures=0; cases=0
report='collective timeout on rank'

# run_case NAME LIMIT_S [--sigstop COMM AFTER_PATTERN] COMMAND...: runs the job, checks the outcome.
run_case() {
  local name="$1" limit="$2"; shift 2
  cases=$((cases + 1))
  fault_run "$limit" "$report" "$@"
  if [ "$FAULT_RC" = "timeout" ]; then
    echo "FAIL $name: still running after $limit s ($FAULT_LEFT live ranks)"; fault_show
    failures=$((failures + 1)); return
  fi
  if [ "$FAULT_RC" = "0" ]; then echo "FAIL $name: exit 0 (expected non-zero)"; failures=$((failures + 1)); return; fi
  if ! grep -q "$report" "$FAULT_LOG"; then
    echo "FAIL $name: no '$report' report"; fault_show
    failures=$((failures + 1)); return
  fi
  if [ "$FAULT_LEFT" -gt 0 ]; then echo "FAIL $name: $FAULT_LEFT rank(s) still alive"; failures=$((failures + 1)); return; fi
  echo "ok   $name (exit $FAULT_RC after $FAULT_TOOK s): $(grep -m1 -o "$report.*seq=[0-9]* count=[0-9]*" "$FAULT_LOG")"
}

# 1. One rank skips an all-reduce, for every CPU backend (timeout 3 s; generous limit for 2 cores).
for backend in mpi ring rd naive; do
  run_case "skip/$backend" 60 "$mpiexec" -np 3 "${flags[@]}" "$skip_bin" "$backend" 3
done

# 2. One rank of a training run is stopped with SIGSTOP (it never dies, so only a timeout helps).
#    It is stopped once the first step line is out, so it stops inside training, not in MPI_Init.
run_case "sigstop/train" 60 --sigstop microddp '^ +1 +[0-9]' \
    "$mpiexec" -np 2 "${flags[@]}" "$microddp" train --steps 100000000 --width 32 --depth 2 \
    --global-batch 16 --comm-timeout 3

echo "$((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
