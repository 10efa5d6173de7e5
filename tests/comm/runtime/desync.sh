#!/bin/bash
# desync.sh — mismatched collectives are reported, not hung on or silently completed.
# Usage: desync.sh <desync_fault> <microddp> <mpiexec> [mpiexec preflags...]
# Cases, at np = 3 (odd, not a power of two) for every CPU backend:
#   --debug-sync: the last rank skips an all_reduce / gives count 999 / broadcasts from another root /
#     reduces with max instead of sum (which the naive backend completes silently without the check)
#     -> every rank prints "collective desync ..." naming what each rank issued at that seq, exit != 0,
#        and the report is the desync report, not the watchdog's timeout (--comm-timeout 60 is only a
#        backstop).
#   periodic check only: the last rank skips an empty all_reduce (nothing hangs, the sequence numbers
#     differ) -> the check reports both sequence numbers.
#   controls: no fault with --debug-sync finishes with exit 0 (no false alarm); the skipped empty
#     all_reduce without any check finishes with exit 0 (what detection is for).
#   `microddp train`, where rank 2 issues one extra empty all_reduce as its 30th collective
#     (MICRODDP_FAULT_EXTRA_COLLECTIVE=2:30): --sync-check-every 10 reports it at step 10 (mpi
#     backend: nothing hangs, so without the check the run ends with exit 0, also checked);
#     --debug-sync names it at seq 30 (naive, ring). And --debug-sync with every strategy on
#     mpi and rd (async collectives on the communication thread) trains to the end: no false alarm,
#     no deadlock.
#   A rank stuck elsewhere while the others wait in the sync check: the watchdog ends the job.
# Job handling (and Open MPI 4.1's occasional launcher deadlock after MPI_Abort): tests/fault_lib.sh.
set -u
bin="$1"; microddp="$2"; mpiexec="$3"; shift 3
flags=("$@")
. "$(dirname "$0")/../../fault_lib.sh"
failures=0; cases=0
report='collective desync'
np=3

# expect_desync NAME PATTERN... -- ARGS: the job must end non-zero with the report on every rank,
# every PATTERN in it, and no watchdog timeout.
expect_desync() {
  local name="$1"; shift
  local patterns=()
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  cases=$((cases + 1))
  fault_run 120 "$report" "$mpiexec" -np "$np" "${flags[@]}" "$@"
  local why=""
  if [ "$FAULT_RC" = "timeout" ]; then why="still running after 120 s"
  elif [ "$FAULT_RC" = "0" ]; then why="exit 0 (expected non-zero)"
  elif grep -q "collective timeout" "$FAULT_LOG"; then why="the watchdog fired: the desync was not detected"
  elif [ "$(grep -c "\] error: $report" "$FAULT_LOG")" -ne "$np" ]; then
    why="$(grep -c "\] error: $report" "$FAULT_LOG") of $np ranks printed the report"
  elif [ "$FAULT_LEFT" -gt 0 ]; then why="$FAULT_LEFT rank(s) still alive"
  else
    local p
    for p in "${patterns[@]}"; do grep -qF -- "$p" "$FAULT_LOG" || why="report lacks '$p'"; done
  fi
  if [ -n "$why" ]; then
    echo "FAIL $name: $why"; fault_show 30; failures=$((failures + 1)); return
  fi
  echo "ok   $name (exit $FAULT_RC after $FAULT_TOOK s): $(grep -m1 -o "$report.*" "$FAULT_LOG" | cut -c1-220)"
}

# expect_clean NAME LINE COUNT COMMAND...: the job must finish with exit 0, printing LINE COUNT times.
expect_clean() {
  local name="$1" want="$2" count="$3"; shift 3
  cases=$((cases + 1))
  fault_run 120 "" "$mpiexec" -np "$np" "${flags[@]}" "$@"
  local got; got=$(grep -c -- "$want" "$FAULT_LOG")
  if [ "$FAULT_RC" != "0" ] || [ "$got" -ne "$count" ]; then
    echo "FAIL $name: exit $FAULT_RC, '$want' printed $got times (want exit 0, $count times)"; fault_show 30
    failures=$((failures + 1)); return
  fi
  echo "ok   $name (exit 0 after $FAULT_TOOK s)"
}

for backend in mpi naive ring rd auto; do
  expect_desync "debug/skip/$backend" "ranks 0,1 issued all_reduce seq=2 count=1000 dtype=f32 op=sum while rank 2 issued barrier seq=2" \
      "backend $backend" -- "$bin" "$backend" skip debug
  expect_desync "debug/count/$backend" "ranks 0,1 issued all_reduce seq=2 count=1000" \
      "while rank 2 issued all_reduce seq=2 count=999" -- "$bin" "$backend" count debug
  expect_desync "debug/root/$backend" "ranks 0,1 issued broadcast seq=2 count=1000 dtype=f32 root=0 while rank 2 issued broadcast seq=2 count=1000 dtype=f32 root=1" \
      -- "$bin" "$backend" root debug
  expect_desync "periodic/skip-empty/$backend" "sync check at step 100" "ranks 0,1 issued 2 collectives" \
      "last all_reduce seq=2 count=0" "rank 2 issued 1 collectives" -- "$bin" "$backend" skip-empty periodic
  expect_desync "debug/op/$backend" "ranks 0,1 issued all_reduce seq=2 count=1000 dtype=f32 op=sum while rank 2 issued all_reduce seq=2 count=1000 dtype=f32 op=max" \
      -- "$bin" "$backend" op debug
  expect_clean "control/debug-no-fault/$backend" "no desync detected" "$np" "$bin" "$backend" none debug
done
# Without any check the skipped empty all_reduce goes unnoticed (the reason for the periodic check).
expect_clean "control/skip-empty-unchecked/mpi" "no desync detected" "$np" "$bin" mpi skip-empty off

# A rank that never reaches the other ranks' collective: the check cannot help (rank 2 waits in the
# sync check, ranks 0 and 1 in the all_reduce it skipped), the watchdog must still end the job,
# naming the sync check on rank 2.
cases=$((cases + 1))
fault_run 120 "collective timeout" "$mpiexec" -np "$np" "${flags[@]}" "$bin" mpi skip periodic 3
if [ "$FAULT_RC" = 0 ] || [ "$FAULT_RC" = timeout ] || [ "$FAULT_LEFT" -gt 0 ] ||
   ! grep -q "collective timeout on rank 2: sync check" "$FAULT_LOG"; then
  echo "FAIL watchdog/sync-check: exit $FAULT_RC, $FAULT_LEFT ranks left"; fault_show 30; failures=$((failures + 1))
else
  echo "ok   watchdog/sync-check (exit $FAULT_RC after $FAULT_TOOK s): $(grep -om1 "collective timeout on rank 2: sync check[^:]*" "$FAULT_LOG")"
fi

# The real binary: the trainer's periodic check, --debug-sync, and no false alarm in training.
T=(train --steps 30 --width 16 --depth 2 --global-batch 12 --threads 1 --log-every 1000)
# The extra collective cases count naive's collectives (one per parameter), so they name it
# (train's default strategy is bucketed).
export MICRODDP_FAULT_EXTRA_COLLECTIVE=2:30
expect_desync "train/periodic/extra-collective/mpi" "sync check at step 10, backend mpi" "ranks 0,1 issued" \
    "while rank 2 issued" -- "$microddp" "${T[@]}" --strategy naive --comm mpi --sync-check-every 10
for backend in naive ring; do
  expect_desync "train/debug/extra-collective/$backend" "while rank 2 issued all_reduce seq=30 count=0 dtype=f32 op=sum" \
      -- "$microddp" "${T[@]}" --strategy naive --comm "$backend" --debug-sync
done
expect_clean "control/train/extra-collective-unchecked/mpi" "# summary:" 1 "$microddp" "${T[@]}" --strategy naive \
    --comm mpi --sync-check-every 0
unset MICRODDP_FAULT_EXTRA_COLLECTIVE
for backend in mpi rd; do
  for strategy in naive flat overlap bucketed; do
    expect_clean "control/train/debug-sync/$strategy/$backend" "--debug-sync: every collective compared" 1 \
        "$microddp" "${T[@]}" --comm "$backend" --strategy "$strategy" --bucket-mb 0.001 --debug-sync --sync-check-every 7
  done
done

echo "$((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
