#!/bin/bash
# signal_requeue.sh — SIGUSR1 to mpirun (which forwards it to every rank, as SLURM's
# --signal=USR1 does) and SIGTERM to ONE rank only: in both cases all ranks agree to stop after the
# same step, write a checkpoint and exit 75 (EX_TEMPFAIL, "requeue me"); the rerun with
# --resume auto finishes, bit-identical to an uninterrupted run. Each summary counts the steps its
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

for how in usr1-mpirun term-one-rank; do
  d="$tmp/$how"; log="$tmp/$how.log"
  timeout 200 "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "${A[@]}" --log-every 1 --checkpoint-dir "$d" >"$log" 2>&1 &
  pid=$!
  # Wait for step 5, then signal.
  for _ in $(seq 1 600); do grep -qE "^ +5 " "$log" && break; sleep 0.05; done
  if [ "$how" == usr1-mpirun ]; then
    mp=$(pgrep -P "$pid" | head -1)   # $pid is `timeout`; its child is mpirun
    [ -n "$mp" ] && kill -USR1 "$mp"
  else
    mp=$(pgrep -P "$pid" | head -1); rank=$(pgrep -P "$mp" | head -1)
    [ -n "$rank" ] && kill -TERM "$rank"
  fi
  wait "$pid"; rc=$?
  if [ $rc -ne 75 ]; then fail "$how: exit $rc, want 75"; tail -5 "$log"; continue; fi
  grep -q "stopping after step" "$log" || fail "$how: no stop message"
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
echo "# $failures failure(s)"
[ $failures -eq 0 ]
