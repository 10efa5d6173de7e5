#!/bin/bash
# default_train_learns.sh — the README's default run (2 ranks, default options) learns: the final
# loss is below half the first step's loss, the metrics file has one line per step plus a summary,
# and the two ranks finish with the summary printed.
# Usage: default_train_learns.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
set -euo pipefail
bin="$1"; shift
mpiexec="$1"; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$mpiexec" -np 2 "$@" "$bin" train --metrics "$dir/m.jsonl" > "$dir/out.txt"
cat "$dir/out.txt"
grep -q "^# summary:" "$dir/out.txt"
steps=$(grep -c '"type":"step"' "$dir/m.jsonl")
summary=$(grep '"type":"summary"' "$dir/m.jsonl")
want_steps=$(sed -E 's/.*"steps":([0-9]+).*/\1/' <<<"$summary")
[ "$steps" -eq "$want_steps" ] || { echo "FAIL: $steps step lines, want $want_steps"; exit 1; }
first=$(sed -E 's/.*"first_loss":([-0-9.e+]+).*/\1/' <<<"$summary")
final=$(sed -E 's/.*"final_loss":([-0-9.e+]+).*/\1/' <<<"$summary")
echo "first loss $first, final loss $final"
awk -v a="$first" -v b="$final" 'BEGIN { exit !(b < 0.5 * a) }' || { echo "FAIL: loss did not fall below half"; exit 1; }
echo "1 passed, 0 failed"
