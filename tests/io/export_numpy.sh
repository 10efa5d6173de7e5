#!/bin/bash
# export_numpy.sh — the exported model runs in numpy: train a tiny model with a checkpoint, `export`
# it, run the docs' numpy inference (docs/checkpoint_format.md, "Exported model") on 100 rows and
# compare with our logits (`evaluate --dump-logits`, at np 2): every logit within
# 1e-5 x max(1, |logit|) — float32 dot products of a few dozen terms summed in another order
# (numpy's BLAS, our blocks) differ by a few ulps, ~1e-7 at these magnitudes; a wrong layout,
# activation or transpose is off by O(1). Also: the attributes read back as Python str (not bytes),
# the predictions and the accuracy equal evaluate's.
# Needs Python 3 with h5py and numpy (Debian: python3-h5py, python3-numpy; setup.sh installs them);
# without them the test is skipped (exit 77) and says why.
# Usage: export_numpy.sh <microddp> <mpiexec> [mpiexec preflags...]
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
cli_init "$@"
cli_python_h5py

run 2 make-dataset "$tmp/train.h5" --samples 400 --in-dim 20 --classes 4 --seed 2 >/dev/null || { echo "FAIL: make-dataset"; exit 1; }
run 1 make-dataset "$tmp/rows.h5" --samples 100 --in-dim 20 --classes 4 --seed 2 >/dev/null || { echo "FAIL: make-dataset"; exit 1; }
run 2 train --data "$tmp/train.h5" --width 24 --depth 3 --global-batch 40 --steps 30 --lr 0.01 --threads 1 \
  --checkpoint-every 30 --checkpoint-dir "$tmp/ck" >/dev/null || { echo "FAIL: train"; exit 1; }
run 2 export "$tmp/ck/ckpt_0000000030.h5" "$tmp/model.h5" >/dev/null || { echo "FAIL: export"; exit 1; }
json=$(run 2 evaluate --checkpoint "$tmp/ck/ckpt_0000000030.h5" --data "$tmp/rows.h5" --threads 1 --json \
  --dump-logits "$tmp/logits.txt") || { echo "FAIL: evaluate"; exit 1; }
correct=$(grep '^  "correct"' <<<"$json" | tr -dc '0-9')

"$python" - "$tmp" "$correct" <<'EOF'
import sys, h5py, numpy as np
d, correct = sys.argv[1], int(sys.argv[2])
# The inference of docs/checkpoint_format.md, as a user would write it.
with h5py.File(f"{d}/model.h5", "r") as f:
    assert f.attrs["format"] == "microddp-model" and isinstance(f.attrs["format"], str), f.attrs["format"]
    layers = [(f[k]["weight"][()], f[k]["bias"][()], f[k].attrs["activation"]) for k in sorted(f)]
    assert [a for _, _, a in layers] == ["relu", "relu", "relu", "none"], [a for _, _, a in layers]
    assert [w.shape for w, _, _ in layers] == [(24, 20), (24, 24), (24, 24), (4, 24)]
with h5py.File(f"{d}/rows.h5", "r") as f:
    x, y = f["inputs"][()], f["labels"][()]
h = x
for W, b, act in layers:
    h = h @ W.T + b
    if act == "relu":
        h = np.maximum(h, 0)
ours = np.loadtxt(f"{d}/logits.txt", dtype=np.float32)
assert ours.shape == h.shape == (100, 4), (ours.shape, h.shape)
err = np.abs(ours - h) / np.maximum(1.0, np.abs(h))
print(f"max |ours - numpy| / max(1, |numpy|) = {err.max():.3g} over {h.size} logits; max |logit| {np.abs(h).max():.3g}")
assert err.max() <= 1e-5, "logits differ"
assert (ours.argmax(1) == h.argmax(1)).all(), "predictions differ"
assert int((h.argmax(1) == y).sum()) == correct, (int((h.argmax(1) == y).sum()), correct)
print(f"ok   numpy runs the export: same logits, predictions and accuracy ({correct} of 100)")
EOF
