#!/bin/bash
# data_changed.sh — a data file that changes on disk under a running `train` stops it: exit 2, a
# message naming the file and what changed, and no step computed on the changed file (HDF5 reads
# past a truncated file's end as zeros, silently). The change comes at a known step:
# MICRODDP_FAULT_TRUNCATE_DATA=RANK:STEP makes rank RANK truncate --data to half its size after
# step STEP, as `truncate -s` would.
#   streamed (--data-memory-mb 0: rows read from disk as needed): the next step's read stops the run;
#   resident (the file fits in memory, read once): the check at the epoch's end stops it, on every
#     rank alike (one message, exit 2, no abort);
#   untouched: the same runs finish (exit 0).
# Usage: data_changed.sh <microddp> <mpiexec> [mpiexec preflags...]
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
cli_init "$@"

run 2 make-dataset "$tmp/ref.h5" --samples 2000 --in-dim 16 --classes 4 --seed 5 >/dev/null || fail "make-dataset"
# 2000 rows in batches of 100: 20 steps per epoch.
T=(--width 16 --depth 1 --global-batch 100 --epochs 3 --threads 1 --log-every 1)
last_step() { awk '/^ +[0-9]+ +[0-9.]+ / { s = $1 } END { print s + 0 }' "$1"; }

for mode in streamed resident; do
  mem=(); [ "$mode" = streamed ] && mem=(--data-memory-mb 0)
  cp "$tmp/ref.h5" "$tmp/d.h5"
  out=$(run 2 train --data "$tmp/d.h5" "${T[@]}" "${mem[@]}" 2>&1); rc=$?
  [ $rc -eq 0 ] && [ "$(last_step /dev/stdin <<<"$out")" = 60 ] && echo "ok   $mode, file untouched: 60 steps, exit 0" ||
    fail "$mode untouched: exit $rc: $(tail -3 <<<"$out")"

  cp "$tmp/ref.h5" "$tmp/d.h5"
  size=$(stat -c %s "$tmp/d.h5")
  MICRODDP_FAULT_TRUNCATE_DATA=0:3 run 2 train --data "$tmp/d.h5" "${T[@]}" "${mem[@]}" >"$tmp/out" 2>"$tmp/err"; rc=$?
  want="dataset $tmp/d.h5 changed on disk during the run: its size went from $size to $((size / 2)) bytes (truncated)"
  # streamed: step 4 reads the truncated file; resident: the check after step 20 (epoch 1's end).
  stop=3; [ "$mode" = resident ] && stop=20
  if [ $rc -eq 2 ] && grep -qF "$want" "$tmp/err" && [ "$(last_step "$tmp/out")" = $stop ]; then
    echo "ok   $mode, truncated after step 3: exit 2 after step $stop: $(grep -m1 -o 'changed on disk.*truncated)' "$tmp/err")"
  else
    fail "$mode truncated: exit $rc, last step $(last_step "$tmp/out") (want 2 after step $stop): $(head -3 "$tmp/err")"
  fi
  if [ "$mode" = resident ]; then  # every rank saw it at the same check: one message, no abort
    [ "$(grep -c "changed on disk" "$tmp/err")" = 1 ] && ! grep -q "MPI_ABORT\|ORTE_ERROR_LOG" "$tmp/err" &&
      echo "ok   resident: one message, a clean exit on every rank" || fail "resident: $(cat "$tmp/err")"
  fi
done

cli_finish
