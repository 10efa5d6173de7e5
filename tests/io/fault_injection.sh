#!/bin/bash
# fault_injection.sh — kill -9 a writer at every named point of a checkpoint save
# (MICRODDP_FAULT_KILL_AT, see src/io/checkpoint_save.hpp), during the 2nd save of a run that saves
# every 2 steps with --keep 1. After each kill: the run failed, `--resume auto` picks the newest
# COMPLETE checkpoint (step 2 before the rename, step 4 after it), never a partial one, and the
# resumed run ends bit-identical to an uninterrupted one.
# Usage: fault_injection.sh <microddp> <h5_mutate> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; shift 2; mpiexec="$1"; shift; mpi_flags=("$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { timeout 120 "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "$@"; }
checksum() { grep -o "parameter checksum [0-9a-f]*" | awk '{print $3}'; }
A=(train --width 16 --depth 2 --in-dim 8 --classes 3 --global-batch 13 --threads 1 --log-every 1000 --steps 6)
ref=$(run "${A[@]}" | checksum)

# writer point rank: rank0 mode covers every point; parallel mode the collective write phase,
# including a non-root writer dying.
cases=()
for p in begin created mid_write before_flush after_flush after_fsync after_rename after_dir_fsync mid_retention; do
  cases+=("rank0 $p 0")
done
cases+=("parallel created 0" "parallel mid_write 0" "parallel mid_write 1" "parallel before_flush 1" "parallel after_flush 0")
for c in "${cases[@]}"; do
  read -r writer point rank <<<"$c"
  d="$tmp/$writer-$point-$rank"
  MICRODDP_FAULT_KILL_AT=$point MICRODDP_FAULT_KILL_SAVE=2 MICRODDP_FAULT_KILL_RANK=$rank \
    run "${A[@]}" --checkpoint-every 2 --keep 1 --checkpoint-writer "$writer" --checkpoint-dir "$d" >/dev/null 2>&1
  rc=$?
  [ $rc -ne 0 ] || { fail "$c: the run was not killed (exit 0)"; continue; }
  case $point in after_rename|after_dir_fsync|mid_retention) want=4 ;; *) want=2 ;; esac
  out=$(run "${A[@]}" --resume auto --checkpoint-every 2 --keep 1 --checkpoint-dir "$d" 2>&1); rc=$?
  got=$(checksum <<<"$out")
  loaded=$(grep -o "loaded .*ckpt_[0-9]*.h5" <<<"$out" | grep -o "[0-9]*\.h5" | sed 's/\.h5//;s/^0*//')
  if [ $rc -ne 0 ]; then fail "$c: resume exit $rc"; grep -i error <<<"$out" | head -3
  elif [ "$loaded" != "$want" ]; then fail "$c: resumed from step '$loaded', want $want"
  elif [ "$got" != "$ref" ]; then fail "$c: resumed run ends with $got, uninterrupted $ref"
  else echo "ok   kill -9 rank $rank at $point ($writer): resumed from step $loaded, bitwise equal"; fi
  ls "$d" | grep -q "\.tmp$" && fail "$c: a temporary file survived the next save"
done
echo "# $failures failure(s)"
[ $failures -eq 0 ]
