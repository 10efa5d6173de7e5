#!/bin/bash
# manual_sync.sh — `microddp manual` (docs/baseline.md):
#   * with the hand-written sum, the replicas stay bitwise identical and the final checksum equals
#     `train -np 2`'s bit for bit (the same two-term sum g_A + g_B; both with 1 BLAS thread per
#     replica, since a threaded GEMM may sum in another order);
#   * with --no-sync, the replicas differ from the first step on and the difference grows.
# Usage: manual_sync.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
set -euo pipefail
bin="$1"; shift
mpiexec="$1"; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run=(--steps 20 --threads 1)

"$bin" manual "${run[@]}" > "$dir/manual.txt"
cat "$dir/manual.txt"
manual=$(sed -nE 's/^# summary: replicas identical .*checksum ([0-9a-f]{16})$/\1/p' "$dir/manual.txt")
[ -n "$manual" ] || fail "manual did not report identical replicas"
awk '$1 ~ /^[0-9]+$/ && ($5 != "yes" || $6 + 0 != 0) { bad = 1 } END { exit bad }' "$dir/manual.txt" \
  || fail "manual printed a step whose replicas differ"

"$mpiexec" -np 2 "$@" "$bin" train "${run[@]}" > "$dir/train.txt"
train=$(sed -nE 's/^#   parameter checksum ([0-9a-f]{16})$/\1/p' "$dir/train.txt")
echo "manual $manual, train -np 2 $train, baseline $("$bin" baseline "${run[@]}" | sed -nE 's/.*checksum ([0-9a-f]{16})$/\1/p')"
[ "$manual" = "$train" ] || fail "manual ($manual) and train -np 2 ($train) differ"

"$bin" manual --no-sync --steps 5 --threads 1 --log-every 1 > "$dir/nosync.txt"
cat "$dir/nosync.txt"
grep -q "^# summary: replicas DIFFER after 5 steps" "$dir/nosync.txt" || fail "--no-sync did not report drift"
# Every step: replicas differ, checksums differ, and max|A-B| grows from the first to the last step.
awk '$1 ~ /^[0-9]+$/ {
       n++; if ($5 != "NO" || $7 == $8 || $6 + 0 <= 0) bad = 1
       if (n == 1) first = $6 + 0; last = $6 + 0
     }
     END { exit !(n == 5 && !bad && last > first) }' "$dir/nosync.txt" \
  || fail "--no-sync: expected 5 steps of growing, non-zero drift with different checksums"
echo "3 passed, 0 failed"
