#!/bin/bash
# fault_lib.sh — sourced by the fault-test scripts (tests/comm/runtime/watchdog.sh, tests/comm/runtime/desync.sh,
# tests/io/rank_failure.sh): run an MPI job that is expected to END (usually non-zero), robustly.
#
# Open MPI 4.1's mpiexec occasionally deadlocks after an MPI_Abort even though every rank has
# already exited (all ranks are zombies, the launcher waits on a futex forever; about 1 run in 20
# here). What we guarantee is that every *rank* ends; so a job counts as ended when no live rank is
# left and the expected report is out, and a launcher still waiting 5 s after that is killed and
# noted ("launcher-deadlock"). Ranks are found as descendants of the launcher's pid (never by
# name: other jobs on the machine may run the same programs).
#
# fault_run LIMIT_S PATTERN [--sigstop COMM AFTER_PATTERN | --kill COMM SIGNAL AFTER_PATTERN] COMMAND...
#   Runs COMMAND in the background, output in $FAULT_LOG. PATTERN (grep -E) is the report that
#   lets a deadlocked launcher be killed once the ranks are gone ("" = none needed).
#   --sigstop COMM AFTER_PATTERN: once AFTER_PATTERN appears in the output, SIGSTOP the newest
#     process named COMM. (Waiting for output, not for a fixed delay: a rank stopped inside
#     MPI_Init, before any watchdog exists, hangs the launcher's start-up fence on a loaded machine.)
#   --kill COMM SIGNAL AFTER_PATTERN: once AFTER_PATTERN appears in the output, send SIGNAL to the
#     newest process named COMM (the job's last rank).
#   Sets FAULT_RC (exit code, "timeout" or "launcher-deadlock"), FAULT_TOOK (s), FAULT_LEFT (live
#   ranks left; they are killed by pid), FAULT_VICTIM (pid signalled, if any); with --kill also
#   FAULT_VICTIM_RANK (its MPI rank, from the launcher's environment variables) and
#   FAULT_AFTER_KILL (s from the signal to the end of the job).
set -u
FAULT_LOG=$(mktemp)
trap 'rm -f "$FAULT_LOG"' EXIT

# fault_descendants PID: pids of every live (non-zombie) descendant of PID.
fault_descendants() {
  ps -eo pid=,ppid=,stat= | awk -v root="$1" '
    { parent[$1] = $2; stat[$1] = $3 }
    END {
      for (p in parent) {
        q = p
        while (q in parent && q != root && q > 1) q = parent[q]
        if (q == root && p != root && stat[p] !~ /^Z/) print p
      }
    }'
}

# fault_newest_named PID COMM: the highest pid among PID's live descendants named COMM.
fault_newest_named() {
  local p best=""
  for p in $(fault_descendants "$1"); do
    if [ "$(ps -o comm= -p "$p" 2>/dev/null)" = "${2:0:15}" ]; then
      if [ -z "$best" ] || [ "$p" -gt "$best" ]; then best=$p; fi
    fi
  done
  echo "$best"
}

fault_run() {
  local limit="$1" pattern="$2"; shift 2
  local mode="" comm="" sig="" after=""
  if [ "$1" = "--sigstop" ]; then mode=stop; comm="$2"; after="$3"; shift 3; fi
  if [ "$1" = "--kill" ]; then mode=kill; comm="$2"; sig="$3"; after="$4"; shift 4; fi
  FAULT_RC=""; FAULT_VICTIM=""; FAULT_VICTIM_RANK=""; FAULT_KILLED_AT=""; FAULT_LEFT=0
  local start; start=$(date +%s.%N)
  "$@" >"$FAULT_LOG" 2>&1 &
  local launcher=$! note="" ranks="" seen=""
  while :; do
    local now; now=$(date +%s.%N)
    local elapsed; elapsed=$(awk -v a="$start" -v b="$now" 'BEGIN { printf "%d", b - a }')
    if [ -z "$FAULT_VICTIM" ] && [ -n "$mode" ]; then
      if [ "$mode" = stop ] && grep -Eq -- "$after" "$FAULT_LOG"; then
        FAULT_VICTIM=$(fault_newest_named "$launcher" "$comm")
        [ -n "$FAULT_VICTIM" ] && kill -STOP "$FAULT_VICTIM" 2>/dev/null
      elif [ "$mode" = kill ] && grep -Eq -- "$after" "$FAULT_LOG"; then
        FAULT_VICTIM=$(fault_newest_named "$launcher" "$comm")
        if [ -n "$FAULT_VICTIM" ]; then
          FAULT_VICTIM_RANK=$(tr '\0' '\n' <"/proc/$FAULT_VICTIM/environ" 2>/dev/null |
                              sed -n 's/^\(OMPI_COMM_WORLD_RANK\|PMIX_RANK\|SLURM_PROCID\)=//p' | head -1)
          FAULT_KILLED_AT=$(date +%s.%N)
          kill "-$sig" "$FAULT_VICTIM" 2>/dev/null
        fi
      fi
    fi
    if ! kill -0 "$launcher" 2>/dev/null; then wait "$launcher"; FAULT_RC=$?; break; fi
    if [ "$elapsed" -gt "$limit" ]; then FAULT_RC="timeout"; break; fi
    ranks=$(fault_descendants "$launcher")
    for p in $ranks; do  # remember every process of the job ("pid:comm"), to check them after the end
      case " $seen " in *" $p:"*) ;; *) seen="$seen $p:$(ps -o comm= -p "$p" 2>/dev/null)" ;; esac
    done
    # The ranks are gone and the report is out, but the launcher is still waiting: give it 5 s.
    # (The report proves the ranks ran; without one, they must have been seen running.)
    if [ -z "$ranks" ] && [ -z "$note" ] &&
       { { [ -n "$pattern" ] && grep -Eq -- "$pattern" "$FAULT_LOG"; } || { [ -z "$pattern" ] && [ -n "$seen" ]; }; }; then
      note="$now"
    fi
    if [ -n "$note" ] && [ "$(awk -v a="$note" -v b="$now" 'BEGIN { print (b - a > 5) }')" = 1 ]; then
      kill -KILL "$launcher" 2>/dev/null; wait "$launcher" 2>/dev/null
      FAULT_RC="launcher-deadlock"; break
    fi
    sleep 0.2
  done
  local end; end=$(date +%s.%N)
  FAULT_TOOK=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  FAULT_AFTER_KILL=""
  [ -n "$FAULT_KILLED_AT" ] && FAULT_AFTER_KILL=$(awk -v a="$FAULT_KILLED_AT" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  # A stopped victim may outlive the job (the launcher's SIGTERM cannot reach it): it is ours, end it.
  if [ "$mode" = stop ] && [ -n "$FAULT_VICTIM" ]; then kill -CONT "$FAULT_VICTIM" 2>/dev/null; kill -KILL "$FAULT_VICTIM" 2>/dev/null; fi
  if kill -0 "$launcher" 2>/dev/null; then kill -KILL "$launcher" 2>/dev/null; wait "$launcher" 2>/dev/null; fi
  sleep 0.2
  # Any process of this job still alive (same pid, same name, not a zombie) is a rank left behind:
  # count it and kill it by pid.
  local entry pid name
  FAULT_LEFT=0
  for entry in $seen; do
    pid=${entry%%:*}; name=${entry#*:}
    if [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" != "" ] && [ "$(ps -o stat= -p "$pid" | cut -c1)" != Z ] &&
       [ "$(ps -o comm= -p "$pid" 2>/dev/null)" = "$name" ]; then
      FAULT_LEFT=$((FAULT_LEFT + 1)); kill -KILL "$pid" 2>/dev/null
    fi
  done
  return 0
}

# fault_show: the job's output, indented, for a failure message.
fault_show() { sed 's/^/    /' "$FAULT_LOG" | head -"${1:-20}"; }
