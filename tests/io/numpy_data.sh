#!/bin/bash
# numpy_data.sh — data in the forms people have it, end to end (docs/data_sets.md):
#   * make-dataset --from-npy X.npy Y.npy and --from-npz (np.savez and np.savez_compressed, with
#     --x-key/--y-key) write the rows numpy computes: float64 rounded (x.astype(np.float32)),
#     uint8 as p / 255 (np.float32(p) / np.float32(255)), N-D rows flattened in C order, big-endian
#     and int16 inputs, any integer labels: bit for bit; the row shape is recorded;
#   * bad arrays are exit 2 with one message naming the file, and leave no output: NaN, a negative
#     label, counts that differ, float labels, a Fortran-order array, a truncated file, extra bytes,
#     an absurd header, a missing key;
#   * HDF5 files with other dataset names (--inputs-key/--labels-key) and uint8 inputs train: the
#     same parameter checksum as the float32 file --from-npy made of the same uint8 arrays (the
#     scaling is the same bits), and `evaluate` reads them the same way;
#   * make-dataset --teacher-seed S --seed R draws rows the model trained on seed S's set can
#     classify (validation accuracy far above chance), where --seed R alone draws another task;
#   * make-dataset --split writes exactly train --val-fraction's split: training on TRAIN.h5 with
#     --val-data VAL.h5 gives the --val-fraction run's losses and validation lines bit for bit.
# Needs Python 3 with h5py and numpy (Debian: python3-h5py, python3-numpy); skipped (exit 77) without.
# Usage: numpy_data.sh <microddp> <mpiexec> [mpiexec preflags...]
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=cli_lib.sh
source "$here/cli_lib.sh"
cli_init "$@"
cli_python_h5py
ok() { echo "ok   $*"; }
checksum() { grep -o "parameter checksum [0-9a-f]*" | awk '{print $3}'; }
losses() { grep -E '^ +[0-9]+ ' | awk '{print $1, $2}'; }

"$python" - "$tmp" <<'EOF' || { echo "FAIL: writing the arrays"; exit 1; }
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(3)
img = rng.integers(0, 256, size=(300, 6, 4), dtype=np.uint8)
lab = (img.reshape(300, -1)[:, :3].sum(axis=1) % 3).astype(np.uint16)  # learnable, any integer type
np.save(f"{d}/img.npy", img); np.save(f"{d}/lab.npy", lab)
xf = rng.standard_normal((300, 5)) * 3          # float64
np.save(f"{d}/xf.npy", xf); np.save(f"{d}/xbe.npy", xf.astype(">f8")); np.save(f"{d}/xi.npy", (xf * 100).astype(np.int16))
np.savez(f"{d}/plain.npz", x=img, y=lab)
np.savez_compressed(f"{d}/packed.npz", images=xf, targets=lab.astype(np.int8))
# Bad arrays.
bad = xf.copy(); bad[7, 2] = np.nan; np.save(f"{d}/nan.npy", bad)
neg = lab.astype(np.int64); neg[11] = -1; np.save(f"{d}/neg.npy", neg)
np.save(f"{d}/short_lab.npy", lab[:299]); np.save(f"{d}/float_lab.npy", lab.astype(np.float32))
np.save(f"{d}/fortran.npy", np.asfortranarray(xf))
raw = open(f"{d}/xf.npy", "rb").read()
open(f"{d}/cut.npy", "wb").write(raw[:-9]); open(f"{d}/long.npy", "wb").write(raw + b"\0")
open(f"{d}/absurd.npy", "wb").write(raw[:8] + b"\xff\xff" + raw[10:])  # a 65535-byte header length
EOF

# ---- the imports: numpy's bits ----
run 1 make-dataset --from-npy "$tmp/img.npy" "$tmp/lab.npy" "$tmp/img.h5" >"$tmp/o1.txt" 2>&1 || fail "--from-npy uint8: $(cat "$tmp/o1.txt")"
run 1 make-dataset --from-npy "$tmp/xf.npy" "$tmp/lab.npy" "$tmp/xf.h5" >/dev/null 2>&1 || fail "--from-npy float64"
run 1 make-dataset --from-npy "$tmp/xbe.npy" "$tmp/lab.npy" "$tmp/xbe.h5" >/dev/null 2>&1 || fail "--from-npy big-endian"
run 1 make-dataset --from-npy "$tmp/xi.npy" "$tmp/lab.npy" "$tmp/xi.h5" >/dev/null 2>&1 || fail "--from-npy int16"
run 1 make-dataset --from-npz "$tmp/plain.npz" "$tmp/plain.h5" >/dev/null 2>&1 || fail "--from-npz savez"
run 1 make-dataset --from-npz "$tmp/packed.npz" --x-key images --y-key targets "$tmp/packed.h5" >/dev/null 2>&1 ||
  fail "--from-npz savez_compressed"
if "$python" - "$tmp" <<'EOF'
import sys, h5py, numpy as np
d = sys.argv[1]
img, lab, xf = np.load(f"{d}/img.npy"), np.load(f"{d}/lab.npy"), np.load(f"{d}/xf.npy")
want = {"img": img.reshape(300, -1).astype(np.float32) / np.float32(255), "plain": None,
        "xf": xf.astype(np.float32), "xbe": xf.astype(np.float32), "packed": xf.astype(np.float32),
        "xi": (xf * 100).astype(np.int16).astype(np.float32)}
want["plain"] = want["img"]
for name, x in want.items():
    with h5py.File(f"{d}/{name}.h5") as f:
        assert f["inputs"].dtype == np.float32 and np.array_equal(f["inputs"][:], x), name
        assert np.array_equal(f["labels"][:], lab.astype(np.int32)), name
        assert f.attrs["classes"] == 3, name
with h5py.File(f"{d}/img.h5") as f:
    assert f.attrs["input_shape"] == b"6x4", f.attrs["input_shape"]
EOF
then ok "--from-npy/--from-npz: uint8, float64, big-endian, int16, savez, savez_compressed: numpy's bits, shape 6x4 recorded"
else fail "imported rows differ from numpy's"; fi

# ---- bad arrays: exit 2, one message, no output ----
bad_case() {  # want-substring, then make-dataset arguments
  local want="$1"; shift
  run 1 make-dataset "$@" "$tmp/bad.h5" >"$tmp/bad.txt" 2>&1
  local rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" "$tmp/bad.txt" && [ ! -e "$tmp/bad.h5" ] && [ ! -e "$tmp/bad.h5.tmp" ]; then
    ok "exit 2: $(grep -m1 error "$tmp/bad.txt" | cut -c1-150)"
  else fail "want exit 2 and '$want' (no bad.h5), got $rc: $(grep -m1 error "$tmp/bad.txt")"; fi
}
bad_case "nan.npy: row 7 column 2 is nan (NaN/Inf inputs are rejected)" --from-npy "$tmp/nan.npy" "$tmp/lab.npy"
bad_case "neg.npy: label -1 of row 11 is out of range" --from-npy "$tmp/xf.npy" "$tmp/neg.npy"
bad_case "short_lab.npy: labels of shape (299,), expected (300,)" --from-npy "$tmp/xf.npy" "$tmp/short_lab.npy"
bad_case "float_lab.npy: labels of dtype float32: expected integers" --from-npy "$tmp/xf.npy" "$tmp/float_lab.npy"
bad_case "fortran_order True" --from-npy "$tmp/fortran.npy" "$tmp/lab.npy"
bad_case "cut.npy: truncated: the header (<f8, shape (300, 5)) promises 12000 bytes of data, the file holds 11991" \
  --from-npy "$tmp/cut.npy" "$tmp/lab.npy"
bad_case "long.npy: 1 extra bytes after the data" --from-npy "$tmp/long.npy" "$tmp/lab.npy"
bad_case "absurd.npy: truncated: the header length says 65535 bytes" --from-npy "$tmp/absurd.npy" "$tmp/lab.npy"
bad_case "plain.npz has no array 'inputs' (it holds: x, y)" --from-npz "$tmp/plain.npz" --x-key inputs
bad_case "2 classes means labels 0..1 (set the number with --classes)" --from-npy "$tmp/xf.npy" "$tmp/lab.npy" --classes 2
bad_case "--x-key and --y-key name the arrays of --from-npz" --from-npy "$tmp/xf.npy" "$tmp/lab.npy" --x-key a

# ---- other dataset names and uint8 inputs in HDF5 ----
"$python" - "$tmp" <<'EOF' || fail "writing the uint8 HDF5 file"
import sys, h5py, numpy as np
d = sys.argv[1]
with h5py.File(f"{d}/u8.h5", "w") as f:
    f["images"] = np.load(f"{d}/img.npy").reshape(300, -1)
    f["targets"] = np.load(f"{d}/lab.npy")
EOF
TR=(train --width 16 --depth 2 --global-batch 30 --threads 1 --steps 12 --log-every 4)
run 2 "${TR[@]}" --data "$tmp/u8.h5" --inputs-key images --labels-key targets >"$tmp/u8.txt" 2>&1 || fail "uint8 keys: $(grep -m1 error "$tmp/u8.txt")"
run 2 "${TR[@]}" --data "$tmp/img.h5" >"$tmp/f32.txt" 2>&1 || fail "the --from-npy file"
c8=$(checksum <"$tmp/u8.txt") c32=$(checksum <"$tmp/f32.txt")
[ -n "$c8" ] && [ "$c8" = "$c32" ] && grep -q "(uint8, scaled to p / 255 on read).*datasets /images, /targets" "$tmp/u8.txt" \
  && ok "uint8 inputs under other names train as the float32 import of the same arrays (checksum $c8)" \
  || fail "uint8 keys: checksum $c8 vs $c32: $(grep 'data ' "$tmp/u8.txt")"
run 2 "${TR[@]}" --data "$tmp/u8.h5" >"$tmp/nokey.txt" 2>&1
[ $? -eq 2 ] && grep -q "dataset /inputs is missing (other names: --inputs-key, --labels-key)" "$tmp/nokey.txt" \
  && ok "a file without /inputs names the options" || fail "missing /inputs: $(grep -m1 error "$tmp/nokey.txt")"

# ---- --teacher-seed: held-out rows of the same task ----
run 2 make-dataset "$tmp/syn.h5" --samples 2048 --in-dim 16 --classes 2 --seed 1 >/dev/null 2>&1 || fail "synthetic set"
run 2 make-dataset "$tmp/same_teacher.h5" --samples 512 --in-dim 16 --classes 2 --seed 2 --teacher-seed 1 >/dev/null 2>&1 ||
  fail "--teacher-seed"
run 2 make-dataset "$tmp/other_task.h5" --samples 512 --in-dim 16 --classes 2 --seed 2 >/dev/null 2>&1 || fail "--seed 2"
V=(train --width 32 --depth 2 --global-batch 64 --threads 1 --steps 200 --lr 0.003 --log-every 100)
acc() { sed -n 's/^#   validation after step [0-9]*: loss [0-9.]* accuracy \([0-9.]*\).*/\1/p' "$1"; }
run 2 "${V[@]}" --data "$tmp/syn.h5" --val-data "$tmp/same_teacher.h5" >"$tmp/t1.txt" 2>&1 || fail "train with --val-data"
run 2 "${V[@]}" --data "$tmp/syn.h5" --val-data "$tmp/other_task.h5" >"$tmp/t2.txt" 2>&1 || fail "train with --val-data (other)"
a1=$(acc "$tmp/t1.txt") a2=$(acc "$tmp/t2.txt")
awk -v a="$a1" -v b="$a2" 'BEGIN { exit !(a >= 0.8 && b < 0.7) }' \
  && ok "--teacher-seed 1 --seed 2: validation accuracy $a1 (another teacher's rows: $a2)" \
  || fail "--teacher-seed: accuracy $a1, other task $a2"

# ---- make-dataset --split is train --val-fraction's split ----
run 1 make-dataset --split --val-fraction 0.2 --seed 4 "$tmp/xf.h5" "$tmp/tr.h5" "$tmp/va.h5" >"$tmp/s.txt" 2>&1 ||
  fail "--split: $(cat "$tmp/s.txt")"
S=(train --width 16 --depth 2 --global-batch 30 --threads 1 --epochs 3 --seed 4 --log-every 1)
run 2 "${S[@]}" --data "$tmp/xf.h5" --val-fraction 0.2 >"$tmp/vf.txt" 2>&1 || fail "--val-fraction run"
run 2 "${S[@]}" --data "$tmp/tr.h5" --val-data "$tmp/va.h5" >"$tmp/vd.txt" 2>&1 || fail "--val-data run"
[ -n "$(losses <"$tmp/vf.txt")" ] && [ "$(losses <"$tmp/vf.txt")" = "$(losses <"$tmp/vd.txt")" ] &&
  [ "$(grep '^# validation' "$tmp/vf.txt")" = "$(grep '^# validation' "$tmp/vd.txt")" ] &&
  [ "$(checksum <"$tmp/vf.txt")" = "$(checksum <"$tmp/vd.txt")" ] \
  && ok "--split's TRAIN.h5 + --val-data VAL.h5 == --val-fraction 0.2: every loss, validation line and the checksum" \
  || fail "--split differs from --val-fraction: $(diff <(losses <"$tmp/vf.txt") <(losses <"$tmp/vd.txt") | head -3)"

cli_finish
