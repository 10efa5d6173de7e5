#!/bin/bash
# signal_requeue.sh — SIGUSR1 to mpirun (which forwards it to every rank, as SLURM's
# --signal=USR1 does), SIGTERM to ONE rank only, and SIGTERM to jobs/elastic_run.sh (which passes
# SIGUSR1 to its mpirun): in each case all ranks agree to stop after the same step, write a
# checkpoint and exit 75 (EX_TEMPFAIL, "requeue me"), and the launcher (the script) returns 75; the
# rerun with --resume auto finishes, bit-identical to an uninterrupted run. SIGTERM to mpirun
# itself: mpirun returns 1 (Open MPI ends the job), as documented. Each summary counts the steps its
# run did (up to the stop; from the stop to the end).
# Usage: signal_requeue.sh <microddp> <h5_mutate> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; shift 2; mpiexec="$1"; shift; mpi_flags=("$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
checksum() { grep -o "parameter checksum [0-9a-f]*" | awk '{print $3}'; }
# 3000 steps (a few seconds): the signal, sent once step 5 is printed (polled every 50 ms), must
# arrive before the run ends; with 400 steps a quiet machine finished first now and then.
A=(train --width 64 --depth 4 --global-batch 64 --threads 1 --steps 3000)
ref=$(timeout 200 "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "${A[@]}" | checksum)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
echo "localhost slots=2" >"$tmp/hostfile"
for how in usr1-mpirun term-one-rank term-elastic; do
  d="$tmp/$how"; log="$tmp/$how.log"
  if [ "$how" == term-elastic ]; then
    # jobs/elastic_run.sh on this host (mpirun, a probe that always answers); it launches mpirun itself.
    MICRODDP_BIN="$bin" RESULTS_DIR="$tmp/results" LAUNCHER=mpirun ELASTIC_PROBE=true \
      timeout 200 "$repo/jobs/elastic_run.sh" --hostfile "$tmp/hostfile" --checkpoint-dir "$d" --checkpoint-every 100000 \
      -- "${A[@]:1}" --log-every 1 >"$log" 2>&1 &
  else
    timeout 200 "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "${A[@]}" --log-every 1 --checkpoint-dir "$d" >"$log" 2>&1 &
  fi
  pid=$!
  # Wait for step 5, then signal.
  for _ in $(seq 1 600); do grep -qE "^ +5 " "$log" && break; sleep 0.05; done
  if [ "$how" == usr1-mpirun ]; then
    mp=$(pgrep -P "$pid" | head -1)   # $pid is `timeout`; its child is mpirun
    [ -n "$mp" ] && kill -USR1 "$mp"
  elif [ "$how" == term-elastic ]; then
    es=$(pgrep -P "$pid" | head -1)   # the script, which passes SIGUSR1 on to its mpirun
    [ -n "$es" ] && kill -TERM "$es"
  else
    mp=$(pgrep -P "$pid" | head -1); rank=$(pgrep -P "$mp" | head -1)
    [ -n "$rank" ] && kill -TERM "$rank"
  fi
  wait "$pid"; rc=$?
  if [ $rc -ne 75 ]; then fail "$how: exit $rc, want 75"; tail -5 "$log"; continue; fi
  grep -q "stopping after step" "$log" || fail "$how: no stop message"
  [ "$how" != term-elastic ] || grep -q "# elastic: stopped by SIGTERM during attempt 1: the ranks wrote a checkpoint and exited 75" "$log" ||
    fail "$how: no stop line from the script: $(grep '# elastic' "$log")"
  ls "$d"/ckpt_*.h5 >/dev/null 2>&1 || { fail "$how: no checkpoint"; continue; }
  # The summaries count the steps each run did: up to the stop, then from it to the end.
  k=$(grep -o 'stopping after step [0-9]*' "$log" | awk '{print $4}')
  grep -q "^# summary: $k steps in [0-9.]* s (stopped at step $k of 3000); loss" "$log" \
    || fail "$how: the stopped run's summary: $(grep '^# summary' "$log")"
  out=$(timeout 200 "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "${A[@]}" --resume auto --checkpoint-dir "$d" 2>&1); rc=$?
  grep -q "^# summary: $((3000 - k)) steps in [0-9.]* s (resumed at step $k; now at step 3000 of 3000); loss" <<<"$out" \
    || fail "$how: the resumed run's summary: $(grep '^# summary' <<<"$out")"
  got=$(checksum <<<"$out")
  if [ $rc -eq 0 ] && [ "$got" == "$ref" ]; then
    echo "ok   $how: exit 75 after step $(grep -o 'stopping after step [0-9]*' "$log" | awk '{print $4}'), resumed bitwise ($got)"
  else fail "$how: resume exit $rc, checksum $got vs $ref"; fi
done
# SIGTERM to mpirun itself: Open MPI ends the job (SIGTERM to the ranks, then SIGKILL) and returns
# 1 whatever the ranks did, so SIGUSR1 is the stop signal to send mpirun (docs/reliability.md,
# "Stopping a run"). This pins down what comes back: if it ever is 75, the docs and
# jobs/elastic_run.sh can key on it.
log="$tmp/term-mpirun.log"
timeout 200 "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "${A[@]}" --log-every 1 --checkpoint-dir "$tmp/term-mpirun" >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -qE "^ +5 " "$log" && break; sleep 0.05; done
mp=$(pgrep -P "$pid" | head -1); [ -n "$mp" ] && kill -TERM "$mp"
wait "$pid"; rc=$?
[ $rc -eq 1 ] && echo "ok   term-mpirun: mpirun returns 1 (SIGUSR1 is the stop signal for mpirun)" || fail "term-mpirun: exit $rc, documented 1"

echo "# $failures failure(s)"
[ $failures -eq 0 ]
