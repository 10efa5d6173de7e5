#!/bin/bash
# watchdog.sh — no silent hangs: a rank that skips a collective, or a rank that is stopped with
# SIGSTOP, makes every rank end within the timeout, with a report naming the collective; so does a
# rank missing from a raw MPI section (start-up, or a watched exchange outside the Communicator).
# Usage: watchdog.sh <watchdog_skip_collective> <watchdog_raw_section> <microddp> <mpiexec> [flags...]
# Job handling (and Open MPI 4.1's occasional launcher deadlock after MPI_Abort): tests/fault_lib.sh.
set -u
skip_bin="$1"; raw_bin="$2"; microddp="$3"; mpiexec="$4"; shift 4
flags=("$@")
. "$(dirname "$0")/../../fault_lib.sh"
failures=0; cases=0
report='collective timeout on rank'

# run_case NAME LIMIT_S [--sigstop COMM AFTER_PATTERN] COMMAND...: runs the job, checks the outcome
# (the report to expect is $report).
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
  echo "ok   $name (exit $FAULT_RC after $FAULT_TOOK s): $(grep -m1 -o "$report.*\(seq=[0-9]* count=[0-9]*\|has not completed\)" "$FAULT_LOG")"
}

# 1. One rank skips an all-reduce, for every CPU backend (timeout 3 s; generous limit for 2 cores).
for backend in mpi ring rd naive; do
  run_case "skip/$backend" 60 "$mpiexec" -np 3 "${flags[@]}" "$skip_bin" "$backend" 3
done

# 2. One rank of a training run is stopped with SIGSTOP (it never dies, so only a timeout helps).
#    It is stopped once the first step line is out, so it stops inside training, not in MPI_Init.
run_case "sigstop/train" 60 --sigstop microddp '^ +1 +[0-9]' \
    "$mpiexec" -np 2 "${flags[@]}" "$microddp" train --steps 100000000 --width 32 --depth 2 \
    --global-batch 16 --comm-timeout 5

# 3. Raw MPI sections (comm::MpiRuntime::watch, timeout 3 s): the last rank sleeps 120 s before
#    MPI start-up, or instead of a watched barrier. Within the 60 s limit only the watchdog ends it.
report='MPI section timeout on rank'
run_case "section/startup" 60 "$mpiexec" -np 3 "${flags[@]}" "$raw_bin" startup 3
if [ "$FAULT_RC" != "timeout" ] && ! grep -q "MPI start-up" "$FAULT_LOG"; then
  echo "FAIL section/startup: the report does not name MPI start-up"; fault_show; failures=$((failures + 1))
fi
run_case "section/barrier" 60 "$mpiexec" -np 3 "${flags[@]}" "$raw_bin" section 3
if [ "$FAULT_RC" != "timeout" ] && ! grep -q "the test's raw barrier" "$FAULT_LOG"; then
  echo "FAIL section/barrier: the report does not name the section"; fault_show; failures=$((failures + 1))
fi

echo "$((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
