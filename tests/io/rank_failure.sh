#!/bin/bash
# rank_failure.sh — a rank that dies ends the job (non-zero, quickly, naming the rank) and loses no
# completed work: the newest checkpoint is valid and `--resume auto` finishes the run bit-identical
# to an uninterrupted one.
#   sigkill: rank np-1 of a 3-rank `train` run is killed with SIGKILL once checkpoints exist.
#   exit:    rank 2 calls _Exit(3) just before collective 1500 (MICRODDP_FAULT_EXIT, a hidden test
#            hook in src/comm/communicator.cpp: no destructors, no MPI_Finalize, like a crash).
# Checks per case: exit code != 0; the job ended well inside --comm-timeout (the launcher, not the
# watchdog, noticed); the launcher's output names the failed rank ("process rank N ... exited on
# signal 9" / "Process name: [[job,1],N]" with its exit code); no rank is left running; `microddp
# inspect` accepts the newest checkpoint; `--resume auto` loads exactly that one and ends with the
# reference run's parameter checksum.
# Usage: rank_failure.sh <microddp> <h5_mutate (unused)> <mpiexec> [mpiexec preflags...]
# Job handling (and Open MPI 4.1's occasional launcher deadlock after a failure): tests/fault_lib.sh.
set -u
bin="$1"; shift 2; mpiexec="$1"; shift; mpi_flags=("$@")
. "$(dirname "$0")/../fault_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"; rm -f "$FAULT_LOG"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
checksum() { grep -o "parameter checksum [0-9a-f]*" | awk '{print $3}'; }
np=3
timeout_s=120  # --comm-timeout: the job must end far sooner, through the launcher
# ~10 ms per step at np=3 on 2 loaded cores: the run lasts seconds, a checkpoint every 20 steps.
A=(train --width 64 --depth 4 --global-batch 64 --threads 1 --steps 600 --log-every 20 --comm-timeout "$timeout_s")
ref=$(timeout 300 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "${A[@]}" | checksum)
[ -n "$ref" ] || { echo "FAIL: the reference run did not finish"; exit 1; }

# check_case NAME DIR RANK: the checks after the failed job (its output in $FAULT_LOG).
check_case() {
  local name="$1" d="$2" r="$3"
  if [ "$FAULT_RC" = "timeout" ]; then fail "$name: still running after the limit"; fault_show; return; fi
  if [ "$FAULT_RC" = "0" ]; then fail "$name: exit 0 (expected non-zero)"; return; fi
  if [ "$(awk -v t="$FAULT_TOOK" -v l="$timeout_s" 'BEGIN { print (t < l / 2) }')" != 1 ]; then
    fail "$name: the job took $FAULT_TOOK s (--comm-timeout $timeout_s s): the failure was not noticed by the launcher"
    return
  fi
  if [ -z "$r" ] || ! grep -Eq "process rank $r |Process name: \[\[[0-9]+,[0-9]+\],$r\]" "$FAULT_LOG"; then
    fail "$name: the output does not name the failed rank '$r'"; fault_show 40; return
  fi
  if [ "$FAULT_LEFT" -gt 0 ]; then fail "$name: $FAULT_LEFT rank(s) still alive"; return; fi
  local newest; newest=$(ls "$d"/ckpt_*.h5 2>/dev/null | sort | tail -1)
  [ -n "$newest" ] || { fail "$name: no checkpoint written before the failure"; return; }
  local step; step=$(basename "$newest" .h5 | sed 's/ckpt_0*//')
  if ! "$bin" inspect "$newest" >/dev/null 2>&1; then fail "$name: inspect rejects the newest checkpoint $newest"; return; fi
  local out rc; out=$(timeout 300 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "${A[@]}" --resume auto \
                      --checkpoint-every 20 --checkpoint-dir "$d" 2>&1); rc=$?
  local loaded; loaded=$(grep -o "loaded .*(step [0-9]*)" <<<"$out" | grep -o "step [0-9]*" | awk '{print $2}')
  local got; got=$(checksum <<<"$out")
  if [ $rc -ne 0 ]; then fail "$name: resume exit $rc"; grep -i error <<<"$out" | head -3; return; fi
  if [ "$loaded" != "$step" ]; then fail "$name: resumed from step '$loaded', newest checkpoint is step $step"; return; fi
  if [ "$got" != "$ref" ]; then fail "$name: resumed run ends with $got, uninterrupted $ref"; return; fi
  echo "ok   $name: exit $FAULT_RC after $FAULT_TOOK s${FAULT_AFTER_KILL:+ ($FAULT_AFTER_KILL s after the kill)}," \
       "rank $r named: \"$(grep -Eom1 "process rank $r [^(]*|Process name: \[\[[0-9]+,[0-9]+\],$r\]" "$FAULT_LOG")\";" \
       "checkpoint step $step valid, resumed bitwise ($got)"
}

# 1. SIGKILL to the newest rank process once the third checkpoint is out.
d="$tmp/sigkill"
fault_run 200 "" --kill microddp KILL "ckpt_0000000060" \
  "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "${A[@]}" --checkpoint-every 20 --checkpoint-dir "$d"
[ -n "$FAULT_VICTIM" ] || fail "sigkill: no rank was killed (did the run finish before step 60?)"
grep -q "exited on signal 9" "$FAULT_LOG" || echo "note sigkill: the launcher did not print 'exited on signal 9'"
check_case "sigkill rank $FAULT_VICTIM_RANK" "$d" "$FAULT_VICTIM_RANK"

# 2. Rank 2 exits with code 3 in the middle of a step (collective 1500 of ~10 per step: step ~150).
d="$tmp/exit"
MICRODDP_FAULT_EXIT=2:1500:3 fault_run 200 "" \
  "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "${A[@]}" --checkpoint-every 20 --checkpoint-dir "$d"
grep -q "Exit code: *3" "$FAULT_LOG" || echo "note exit: the launcher did not report exit code 3"
check_case "exit(3) rank 2" "$d" 2

echo "# $failures failure(s)"
[ $failures -eq 0 ]
