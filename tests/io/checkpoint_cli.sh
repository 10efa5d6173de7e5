#!/bin/bash
# checkpoint_cli.sh — `microddp train` checkpoints end to end:
#   1. 8 straight steps == 4 steps + checkpoint + `--resume auto` + 4 steps, bitwise (parameter
#      checksum), at np 2 and np 3;
#   2. a damaged newest checkpoint (flipped data byte, truncated file, missing dataset, wrong shape,
#      wrong dtype, wrong format version, different model): `--resume PATH` exits 2 with a message
#      naming the file and what is wrong; `--resume auto` falls back to the previous checkpoint and
#      finishes; the previous checkpoint is untouched (sha256); `inspect` exits 2.
# Usage: checkpoint_cli.sh <microddp> <h5_mutate> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; mutate="$2"; mpiexec="$3"; shift 3; mpi_flags=("$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { local np=$1; shift; timeout 120 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "$@"; }
checksum() { grep -o "parameter checksum [0-9a-f]*" | awk '{print $3}'; }
A=(train --width 16 --depth 2 --in-dim 8 --classes 3 --global-batch 13 --threads 1 --log-every 1000)

for np in 2 3; do
  ref=$(run $np "${A[@]}" --steps 8 | checksum)
  d="$tmp/resume$np"
  run $np "${A[@]}" --steps 4 --checkpoint-every 4 --checkpoint-dir "$d" >/dev/null || fail "np $np: first half"
  got=$(run $np "${A[@]}" --steps 8 --resume auto --checkpoint-dir "$d" | checksum)
  if [ -n "$ref" ] && [ "$ref" == "$got" ]; then echo "ok   np $np: resume is bitwise ($got)"; else fail "np $np: straight $ref, resumed '$got'"; fi
done

pristine="$tmp/pristine"
run 2 "${A[@]}" --steps 4 --checkpoint-every 2 --keep 0 --checkpoint-dir "$pristine" >/dev/null || fail "making checkpoints"
new=ckpt_0000000004.h5; old=ckpt_0000000002.h5
case_n=0
halve() { truncate -s $(( $(stat -c%s "$1") / 2 )) "$1"; }  # cut the file in the middle
check_case() {  # check_case "<expected message>" <mutation command...>; FILE stands for the newest checkpoint
  local expect="$1"; shift
  case_n=$((case_n + 1))
  d="$tmp/case$case_n"; cp -r "$pristine" "$d"
  local cmd=("${@/#FILE/$d/$new}")
  "${cmd[@]}" || { fail "mutation failed: ${cmd[*]}"; return; }
  local sum_before; sum_before=$(sha256sum < "$d/$old")
  local out rc
  out=$(run 2 "${A[@]}" --steps 6 --resume "$d/$new" --checkpoint-dir "$d" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 2 ]; then fail "[$expect] --resume PATH exit $rc, want 2"; echo "$out" | head -3;
  elif ! grep -qF -- "$new" <<<"$out" || ! grep -qiF -- "$expect" <<<"$out"; then fail "[$expect] message: $out";
  else echo "ok   --resume PATH: $(grep -m1 error <<<"$out" | cut -c1-150)"; fi
  out=$(run 2 "${A[@]}" --steps 6 --resume auto --checkpoint-dir "$d" 2>&1); rc=$?
  if [ $rc -ne 0 ] || ! grep -q "loaded $d/$old" <<<"$out" || ! grep -q "skipped" <<<"$out"; then
    fail "[$expect] --resume auto did not fall back (exit $rc)"; echo "$out" | grep resume | head -3
  else echo "ok   --resume auto fell back to $old"; fi
  [ "$(sha256sum < "$d/$old")" == "$sum_before" ] || fail "[$expect] previous checkpoint changed"
  run 1 inspect "$d/$new" >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "[$expect] inspect exit $rc, want 2"
}
check_case "checksum mismatch"           "$mutate" flip FILE /model/layer_01/weight
check_case "$new"                        halve FILE
check_case "/optimizer/exp_avg/layer_00/bias is missing" "$mutate" delete FILE /optimizer/exp_avg/layer_00/bias
check_case "has shape (2, 2), expected (16, 16)" "$mutate" reshape FILE /model/layer_01/weight
check_case "has dtype int32, expected float32"   "$mutate" retype FILE /model/layer_00/bias
check_case "format_version is 3"         "$mutate" setint FILE / format_version 3
check_case "attribute digest mismatch"   "$mutate" setint FILE / steps_done 3

# A checkpoint of another model: refused by path (naming the field), skipped by auto.
B=(train --width 17 --depth 2 --in-dim 8 --classes 3 --global-batch 13 --threads 1)
out=$(run 2 "${B[@]}" --steps 6 --resume "$pristine/$new" 2>&1 >/dev/null); rc=$?
if [ $rc -eq 2 ] && grep -q "width = 16 (this run: 17)" <<<"$out"; then echo "ok   other model refused"; else fail "other model: exit $rc: $out"; fi
run 1 inspect "$pristine/$new" >/dev/null || fail "inspect of a valid checkpoint"

echo "# $failures failure(s)"
[ $failures -eq 0 ]
