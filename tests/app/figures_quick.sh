#!/bin/bash
# figures_quick.sh MICRODDP — the course's figure command (docs/tools/make_figures.sh) end to end in
# quick mode: every run it makes succeeds, every figure and docs page is written, and the ring's
# schedule printed by `microddp ring-schedule` replays to a complete sum (figures.py fails if not),
# and each figure's data file (OUT/data/) holds what tests/docs/check_figure_claims.py reads.
# Skipped (77) without Debian's python3-matplotlib.
set -euo pipefail
bin=$1
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
py=/usr/bin/python3; [ -x "$py" ] || py=python3
"$py" -c "import matplotlib" 2>/dev/null || { echo "SKIP: no matplotlib for $py (python3-matplotlib)"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$repo/docs/tools/make_figures.sh" --quick --build "$(dirname "$bin")" --out "$out"
expected="ring_schedule busbw alpha_beta_fit bucket_sweep timeline_naive timeline_flat timeline_overlap
timeline_bucketed scaling compression_loss compression_bytes zero_memory"
for f in $expected; do
  [ -s "$out/$f.png" ] || { echo "FAIL: $f.png was not written"; exit 1; }
  grep -q "($f.png)" "$out/figures.md" || { echo "FAIL: figures.md does not show $f.png"; exit 1; }
done
n=$(ls "$out"/*.png | wc -l)
[ "$n" = "$(echo $expected | wc -w)" ] || { echo "FAIL: $n figures, expected $(echo $expected | wc -w)"; exit 1; }
grep -q "quick mode" "$out/figures.md" || { echo "FAIL: figures.md does not say it is a quick set"; exit 1; }
# The data beside the figures has everything the caption checks read (their numbers mean nothing here).
"$py" "$repo/tests/docs/check_figure_claims.py" --img "$out" --schema-only ||
  { echo "FAIL: the figures' data files lack what tests/docs/check_figure_claims.py reads"; exit 1; }
echo "PASS: $n figures and figures.md"
