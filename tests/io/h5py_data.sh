#!/bin/bash
# h5py_data.sh — data sets written with h5py the obvious way, end to end through `microddp`:
#   * f["inputs"] = x; f["labels"] = y with numpy's defaults (float64, int64, no attributes):
#     `train --data` without --in-dim / --classes takes 12 features and max label + 1 = 3 classes
#     from the file, says so in the header (and the float64 conversion once), and learns;
#   * the same data as float32/int32 with h5py's variable-length string attributes trains to the
#     same parameter checksum, bitwise (the float64 -> float32 conversion rounds as numpy does);
#   * `inspect` reports both files VALID, naming dtypes and where the classes came from;
#   * bad files keep their errors, exit 2 with one message naming the file and the dataset: a NaN
#     input, a negative label, a label >= --classes, row counts that disagree.
# Needs Python 3 with h5py and numpy (Debian: python3-h5py, python3-numpy; setup.sh installs them);
# without them the test is skipped (exit 77) and says why.
# Usage: h5py_data.sh <microddp> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; mpiexec="$2"; shift 2; mpi_flags=("$@")
python=""
for p in "${PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 && "$p" -c "import h5py, numpy" 2>/dev/null && { python="$p"; break; }
done
if [ -z "$python" ]; then
  echo "SKIP: no Python 3 with h5py and numpy (install python3-h5py python3-numpy, or set PYTHON)"
  exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { local np=$1; shift; timeout 120 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "$@"; }
checksum() { grep -o "parameter checksum [0-9a-f]*" | awk '{print $3}'; }

"$python" - "$tmp" <<'EOF' || { echo "FAIL: writing the h5py files"; exit 1; }
import sys, h5py, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.standard_normal((600, 12))          # float64, numpy's default
y = np.argmax(x @ rng.standard_normal((12, 3)), axis=1)  # int64, numpy's default
assert x.dtype == np.float64 and y.dtype == np.int64
def write(name, inputs, labels, **attrs):
    with h5py.File(f"{d}/{name}.h5", "w") as f:
        f["inputs"] = inputs
        f["labels"] = labels
        for k, v in attrs.items():
            f.attrs[k] = v                        # a Python str becomes a variable-length string
write("plain", x, y)
write("f32", x.astype(np.float32), y.astype(np.int32), format="microddp-dataset", format_version=1, classes=3,
      note="written by h5py")
bad = x.copy(); bad[7, 2] = np.nan; write("nan", bad, y)
neg = y.copy(); neg[11] = -1; write("negative", x, neg)
write("rows", x, y[:-1])
EOF

A=(train --width 16 --depth 2 --global-batch 60 --steps 60 --lr 0.01 --threads 1 --log-every 1000)
out=$(run 2 "${A[@]}" --data "$tmp/plain.h5" 2>&1); rc=$?
if [ $rc -ne 0 ]; then fail "train on the h5py file: exit $rc"; echo "$out" | tail -5
else
  grep -q "FullMLP in=12 width=16 depth=2 classes=3" <<<"$out" && echo "ok   in_dim 12 and 3 classes taken from the file" \
    || fail "model line: $(grep -m1 FullMLP <<<"$out")"
  grep -q "3 classes = max label + 1" <<<"$out" && echo "ok   header says classes = max label + 1" || fail "no classes note: $(grep -m1 'data  ' <<<"$out")"
  n=$(grep -c "converted to float32" <<<"$out")
  [ "$n" -eq 1 ] && echo "ok   float64 conversion noted once" || fail "float64 note printed $n times"
  first=$(awk '$1 == 1 {print $2}' <<<"$out"); last=$(awk '$1 == 60 {print $2}' <<<"$out")
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.8 * a) }' && echo "ok   it learns: loss $first -> $last" \
    || fail "loss $first -> $last did not fall by 20%"
fi
plain=$(checksum <<<"$out")
f32=$(run 2 "${A[@]}" --data "$tmp/f32.h5" | checksum)
if [ -n "$plain" ] && [ "$plain" == "$f32" ]; then echo "ok   float64/int64 file == float32/int32 file, bitwise ($f32)"
else fail "checksums: float64 file '$plain', float32 file '$f32'"; fi

for f in plain f32; do
  out=$(run 1 inspect "$tmp/$f.h5" 2>&1); rc=$?
  if [ $rc -eq 0 ] && grep -q VALID <<<"$out"; then echo "ok   inspect $f.h5: $(sed -n 2p <<<"$out" | cut -c1-110)"
  else fail "inspect $f.h5 exit $rc: $out"; fi
done
grep -q "max label + 1" <<<"$(run 1 inspect "$tmp/plain.h5")" || fail "inspect does not say where the classes came from"

expect2() {  # expect2 "<message>" <microddp args...>
  local want="$1"; shift
  local out rc; out=$(run 2 "$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" <<<"$out"; then echo "ok   exit 2: $(grep -m1 error <<<"$out" | cut -c1-150)"
  else fail "want exit 2 and '$want', got $rc: $(head -3 <<<"$out")"; fi
}
B=(train --width 16 --depth 2 --global-batch 60 --steps 2 --threads 1)
expect2 "$tmp/nan.h5: /inputs row 7 column 2 is nan" "${B[@]}" --data "$tmp/nan.h5"
expect2 "$tmp/negative.h5: /labels row 11 is -1, labels must be >= 0" "${B[@]}" --data "$tmp/negative.h5"
expect2 "$tmp/plain.h5: /labels row" "${B[@]}" --data "$tmp/plain.h5" --classes 2
expect2 "$tmp/rows.h5: dataset /labels has shape (599,), expected (600,)" "${B[@]}" --data "$tmp/rows.h5"
expect2 "has 12 features and 3 classes but the model expects 8" "${B[@]}" --data "$tmp/plain.h5" --in-dim 8
echo "# $failures failure(s)"
[ $failures -eq 0 ]
