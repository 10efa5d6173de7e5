#!/bin/bash
# make_seeds.sh — writes the valid seed files fuzz_h5_header edits: a small checkpoint and a small
# dataset, made by the real `microddp` so they follow the current format.
# Usage: make_seeds.sh <microddp> <out-dir>
set -euo pipefail
microddp="$1"; out="$2"
rm -rf "$out"; mkdir -p "$out/ckpt"
"$microddp" train --steps 2 --width 8 --depth 2 --global-batch 8 --checkpoint-every 2 \
    --checkpoint-dir "$out/ckpt" --log-every 0 --threads 1 >/dev/null
mv "$(ls "$out"/ckpt/*.h5 | tail -1)" "$out/checkpoint.h5"
"$microddp" make-dataset "$out/dataset.h5" --samples 16 --in-dim 4 --classes 3 >/dev/null
echo "seeds: $out/checkpoint.h5 $out/dataset.h5"
