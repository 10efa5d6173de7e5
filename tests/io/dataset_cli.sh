#!/bin/bash
# dataset_cli.sh — `make-dataset`, `train --data`, `inspect` end to end:
#   training from the HDF5 file (in file order) equals training on the synthetic generator, bitwise (the file
#   holds samples 0..N-1 of the same seed, and the run reads fewer than N samples); inspect says
#   VALID; a wrong model in_dim, a wrong dtype, a missing dataset, a wrong version and a non-HDF5
#   file each exit 2 with a message naming the file and what is wrong.
# Usage: dataset_cli.sh <microddp> <h5_mutate> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; mutate="$2"; mpiexec="$3"; shift 3; mpi_flags=("$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { local np=$1; shift; timeout 120 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "$@"; }
checksum() { grep -o "parameter checksum [0-9a-f]*" | awk '{print $3}'; }
A=(train --width 16 --depth 2 --in-dim 12 --classes 3 --seed 4 --global-batch 24 --threads 1 --steps 10)
f="$tmp/set.h5"
run 3 make-dataset "$f" --samples 500 --in-dim 12 --classes 3 --seed 4 >/dev/null || fail "make-dataset"
ref=$(run 2 "${A[@]}" | checksum)
# --shuffle off: file order, and 10 steps of 24 rows stay inside the first epoch of 500 rows, so
# step s reads rows [24 s, 24 s + 24) as the synthetic stream makes samples [24 s, 24 s + 24).
got=$(run 2 "${A[@]}" --data "$f" --shuffle off | checksum)
if [ -n "$ref" ] && [ "$ref" == "$got" ]; then echo "ok   train --data == synthetic ($got)"; else fail "train --data $got, synthetic $ref"; fi
out=$(run 1 inspect "$f") && grep -q VALID <<<"$out" && echo "ok   inspect: valid" || fail "inspect: $out"

expect2() {  # expect2 "<message>" <microddp args...>
  local want="$1"; shift
  local out rc; out=$(run 2 "$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" <<<"$out"; then echo "ok   exit 2: $(grep -m1 error <<<"$out" | cut -c1-140)"
  else fail "want exit 2 and '$want', got $rc: $(head -3 <<<"$out")"; fi
}
B=(train --width 16 --depth 2 --in-dim 8 --classes 3 --global-batch 24 --threads 1 --steps 2)
expect2 "has 12 features and 3 classes but the model expects 8" "${B[@]}" --data "$f"
cp "$f" "$tmp/t.h5"; "$mutate" retype "$tmp/t.h5" /inputs
expect2 "/inputs has dtype int32, expected float32" "${A[@]}" --data "$tmp/t.h5"
cp "$f" "$tmp/m.h5"; "$mutate" delete "$tmp/m.h5" /labels
expect2 "dataset /labels is missing" "${A[@]}" --data "$tmp/m.h5"
cp "$f" "$tmp/v.h5"; "$mutate" setint "$tmp/v.h5" / format_version 9
expect2 "format_version is 9" "${A[@]}" --data "$tmp/v.h5"
echo "not hdf5" > "$tmp/x.h5"
expect2 "not an HDF5 file" "${A[@]}" --data "$tmp/x.h5"
run 1 inspect "$tmp/m.h5" >/dev/null 2>&1; [ $? -eq 2 ] || fail "inspect of a broken dataset should exit 2"
echo "# $failures failure(s)"
[ $failures -eq 0 ]
