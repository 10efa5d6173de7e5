#!/bin/bash
# model_cli.sh — `evaluate` and `export` end to end on a small trained checkpoint:
#   * evaluate --json is identical at np 1, 2 and 3 (every count, the loss to the last digit; only
#     world_size and seconds differ), also with a block size that divides nothing (--batch 7);
#   * the thread count changes no bit: np 1 with the default threads == np 2 == --threads 1, 3 (a
#     model wide enough for threaded GEMMs); --batch 2^20 on 301 rows holds 301 rows (1.5 GiB of
#     address space is enough) and gives the result of --batch 301;
#   * the text output has the loss, accuracy, per-class lines and the confusion matrix, whose rows
#     sum to the class counts; --dump-logits writes one line per row of the file;
#   * export writes one group per layer (h5ls), without the optimizer state;
#   * bad input exits 2 with one message on every rank: a data file of another shape, a data file
#     given as the checkpoint, a missing checkpoint, an export to a directory that does not exist.
# Usage: model_cli.sh <microddp> <mpiexec> [mpiexec preflags...]
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
cli_init "$@"

run 2 make-dataset "$tmp/train.h5" --samples 600 --in-dim 12 --classes 3 --seed 4 >/dev/null || fail "make-dataset train"
# The same teacher (seed), 301 rows: the first half of the training file (labels of another seed
# would come from another teacher).
run 2 make-dataset "$tmp/test.h5" --samples 301 --in-dim 12 --classes 3 --seed 4 >/dev/null || fail "make-dataset test"
run 2 train --data "$tmp/train.h5" --width 16 --depth 2 --global-batch 60 --steps 60 --lr 0.01 --threads 1 \
  --checkpoint-every 60 --checkpoint-dir "$tmp/ck" >/dev/null || fail "train"
ck="$tmp/ck/ckpt_0000000060.h5"

stable() { grep -v -E '"(world_size|seconds)"'; }  # the JSON lines that must not depend on np
for batch in 64 7; do
  ref=$(run 1 evaluate --checkpoint "$ck" --data "$tmp/test.h5" --json --threads 1 --batch "$batch" | stable)
  grep -q '"rows": 301' <<<"$ref" || fail "evaluate np 1 (batch $batch): $ref"
  for np in 2 3; do
    got=$(run "$np" evaluate --checkpoint "$ck" --data "$tmp/test.h5" --json --threads 1 --batch "$batch" | stable)
    if [ -n "$got" ] && [ "$got" == "$ref" ]; then echo "ok   evaluate --batch $batch: np $np == np 1"
    else fail "evaluate --batch $batch: np $np differs: $(diff <(echo "$ref") <(echo "$got") | head -5)"; fi
  done
done
# A wider model (256 hidden units): its GEMMs are large enough for OpenBLAS to use threads.
run 2 train --data "$tmp/train.h5" --width 256 --depth 2 --global-batch 60 --steps 2 --threads 1 \
  --checkpoint-every 2 --checkpoint-dir "$tmp/wide_ck" >/dev/null || fail "train (wide)"
wide="$tmp/wide_ck/ckpt_0000000002.h5"
# The thread count changes no bit: np 1 with the default threads (the rank's CPUs: 2 on a 2-core
# machine) equals np 2 (1 thread each) and np 1 with --threads 1 and 3, for several block sizes.
wide_eval() { local np=$1; shift; run "$np" evaluate --checkpoint "$wide" --data "$tmp/test.h5" --json "$@" | stable; }
for batch in 64 1024; do
  wref=$(wide_eval 1 --batch "$batch")
  grep -q '"rows": 301' <<<"$wref" || fail "evaluate (wide, default threads, batch $batch): $wref"
  for how in "2" "1 --threads 1" "1 --threads 3"; do
    # shellcheck disable=SC2086
    wgot=$(wide_eval $how --batch "$batch")
    if [ -n "$wgot" ] && [ "$wgot" == "$wref" ]; then echo "ok   evaluate --batch $batch: np $how == np 1, default threads"
    else fail "evaluate --batch $batch: np $how differs from np 1 with default threads: $(diff <(echo "$wref") <(echo "$wgot") | head -5)"; fi
  done
done
# --batch far beyond the rows: buffers for min(batch, rows) = 301 rows, not 2^20 (which would
# take 2^20 x 256 floats = 1 GiB per activation): 1.5 GiB of address space is plenty, and the
# blocks, hence the result, are those of --batch 301.
ulimit -S -v 1572864
wgot=$(wide_eval 1 --batch 1048576 --threads 1); rc=$?
ulimit -S -v unlimited
want=$(wide_eval 1 --batch 301 --threads 1)
if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$wgot" == "$want" ]; then
  echo "ok   evaluate --batch 1048576 on 301 rows: within 1.5 GiB, the result of --batch 301"
else fail "evaluate --batch 1048576: exit $rc: $(diff <(echo "$want") <(echo "$wgot") | head -5)"; fi

acc=$(grep '^  "accuracy"' <<<"$ref" | tr -dc '0-9.')  # the top-level key (2 spaces)
awk -v a="$acc" 'BEGIN { exit !(a > 0.8) }' && echo "ok   accuracy $acc (chance 0.33)" || fail "accuracy $acc"

text=$(run 2 evaluate --checkpoint "$ck" --data "$tmp/test.h5" --threads 1 --dump-logits "$tmp/logits.txt")
grep -qE "^loss [0-9.]+  accuracy [0-9.]+ \([0-9]+ of 301\)" <<<"$text" && echo "ok   text: loss and accuracy" ||
  fail "text output: $text"
# Confusion rows (after the header) sum to the per-class row counts.
if awk '/^# class/ { c = 1; next } /^# confusion/ { c = 0; m = 1; getline; next }
        c { rows[$1] = $2 } m && NF == 4 { s = $2 + $3 + $4; if (s != rows[$1]) bad = 1; n++ }
        END { exit (bad || n != 3) }' <<<"$text"; then echo "ok   text: confusion rows sum to the class counts"
else fail "confusion matrix: $text"; fi
[ "$(grep -vc '^#' "$tmp/logits.txt")" -eq 301 ] && [ "$(grep -v '^#' "$tmp/logits.txt" | awk '{ print NF }' | sort -u)" == 3 ] &&
  echo "ok   --dump-logits: 301 rows x 3 logits" || fail "--dump-logits: $(head -3 "$tmp/logits.txt")"

out=$(run 2 export "$ck" "$tmp/model.h5") && grep -q "3 layers 12-16-16-3" <<<"$out" || fail "export: $out"
if command -v h5ls >/dev/null 2>&1; then
  l=$(h5ls -r "$tmp/model.h5")
  grep -q "/layer_00/weight *Dataset {16, 12}" <<<"$l" && grep -q "/layer_02/bias *Dataset {3}" <<<"$l" &&
    ! grep -q optimizer <<<"$l" && echo "ok   export: layer groups, (out, in) weights, no optimizer state" ||
    fail "export layout: $l"
fi

expect2() {  # expect2 "<message>" <np> <microddp args...>
  local want="$1" np="$2"; shift 2
  local o rc; o=$(run "$np" "$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" <<<"$o" && [ "$(grep -c error <<<"$o")" -eq 1 ]; then
    echo "ok   exit 2: $(grep -m1 error <<<"$o" | cut -c1-150)"
  else fail "want exit 2 and '$want' once, got $rc: $(head -3 <<<"$o")"; fi
}
run 1 make-dataset "$tmp/wide.h5" --samples 20 --in-dim 13 --classes 3 >/dev/null
expect2 "wide.h5 has 13 features, but the model of $ck takes 12 features" 3 \
  evaluate --checkpoint "$ck" --data "$tmp/wide.h5"
# The file's class count is said as the file states it (its 'classes' attribute), never the model's.
run 1 make-dataset "$tmp/four.h5" --samples 20 --in-dim 12 --classes 4 >/dev/null
expect2 "four.h5 has 4 classes (its 'classes' attribute), but the model of $ck has 3 classes" 2 \
  evaluate --checkpoint "$ck" --data "$tmp/four.h5"
expect2 "$tmp/test.h5" 2 evaluate --checkpoint "$tmp/test.h5" --data "$tmp/test.h5"
expect2 "$tmp/none.h5: No such file or directory" 2 evaluate --checkpoint "$tmp/none.h5" --data "$tmp/test.h5"
expect2 "export's output $tmp/no/dir/m.h5: its directory $tmp/no/dir cannot be used" 2 export "$ck" "$tmp/no/dir/m.h5"
cli_finish
