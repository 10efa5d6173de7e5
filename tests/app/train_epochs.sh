#!/bin/bash
# train_epochs.sh — `train --data` in shuffled epochs with a validation set, end to end
# (docs/data_sets.md, "Epochs" and "Validation during training"):
#   * every world size reads the same global batches: with the parameters all but frozen (--lr 1e-12
#     moves a weight by about 1e-12, biases from 0 to about 1e-12, invisible in six digits of loss,
#     so the loss is a function of the batch's rows) the loss of every step is the same at np 1, 2
#     and 3 (to 1e-6: the loss is summed over ranks in float), and differs with --shuffle off (the order is
#     really shuffled); with a real learning rate the runs agree to 1e-5 relative, the design's
#     DDP-vs-one-process tolerance (gradients summed over ranks round differently, so training is
#     not bitwise across world sizes; it is bitwise at one world size);
#   * --epochs E runs E x floor(N_train / B) steps and the epoch column says 1 up to step S, 2 after;
#   * a resume in the middle of an epoch ends bitwise where the uninterrupted run ends (same np), and
#     on another np within the tolerance above; a resume with another --shuffle or --val-fraction is
#     refused (exit 2: the checkpoint records how the data is read);
#   * validation: the same line at np 1, 2 and 3 with those parameters (the evaluator's counts are
#     integers, all-reduced: for equal parameters they are bitwise at any np, ddp_evaluator.np{1,2,3};
#     here the parameters differ by ~1e-12 across np), a "validation" record in --metrics, and on an easy set
#     an accuracy well above the majority class's share;
#   * a global batch larger than the training rows, and --epochs with --steps, are exit 2.
# Usage: train_epochs.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; shift
mpiexec="$1"; shift
mpi_flags=("$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { local np=$1; shift; timeout 120 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "$@"; }
losses() { grep -v '^#' | awk '{print $1, $2}'; }  # "step loss" of every progress line
epochs() { grep -v '^#' | awk '{print $1, $10}'; } # "step epoch"
checksum() { grep -o "parameter checksum [0-9a-f]*" | awk '{print $3}'; }
# Two "step loss" lists agree to relative tolerance $3 at every step (and have the same steps).
close() {
  paste -d' ' <(echo "$1") <(echo "$2") | awk -v tol="$3" '
    { if ($1 != $3) bad = 1; d = $2 - $4; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2; if (d > tol * m + 1e-6) bad = 1; n++ }
    END { exit (bad || n == 0) }'
}

f="$tmp/d.h5"
run 1 make-dataset "$f" --samples 500 --in-dim 12 --classes 3 --seed 5 >/dev/null || fail "make-dataset"
# 450 training rows (--val-fraction 0.1 holds out 50), batch 64: 7 steps per epoch, 2 rows dropped.
T=(train --data "$f" --width 16 --depth 2 --global-batch 64 --val-fraction 0.1 --threads 1 --log-every 1)

# Same batches at every world size (parameters all but frozen).
for np in 1 2 3; do run "$np" "${T[@]}" --epochs 2 --lr 1e-12 >"$tmp/frozen$np.txt" 2>&1 || fail "frozen np $np: $(tail -3 "$tmp/frozen$np.txt")"; done
ref=$(losses <"$tmp/frozen1.txt")
for np in 2 3; do
  # The loss is summed over ranks in float, so the last printed digit may differ; a different
  # batch changes the loss in the second or third digit.
  if [ -n "$ref" ] && close "$ref" "$(losses <"$tmp/frozen$np.txt")" 1e-6; then ok "np $np reads np 1's batches: every step's loss within 1e-6"
  else fail "np $np losses differ from np 1's: $(diff <(echo "$ref") <(losses <"$tmp/frozen$np.txt") | head -4)"; fi
  v1=$(grep "^# validation:" "$tmp/frozen1.txt"); vn=$(grep "^# validation:" "$tmp/frozen$np.txt")
  if [ -n "$v1" ] && [ "$v1" == "$vn" ]; then ok "np $np validation lines == np 1's ($(tail -1 <<<"$vn"))"
  else fail "validation at np $np: '$vn', np 1: '$v1'"; fi
done
run 2 "${T[@]}" --epochs 2 --lr 1e-12 --shuffle off >"$tmp/fileorder.txt" 2>&1 || fail "--shuffle off run"
[ -n "$ref" ] && ! close "$ref" "$(losses <"$tmp/fileorder.txt")" 1e-3 && ok "--shuffle off reads other batches than --shuffle on" \
  || fail "--shuffle off gave the shuffled run's losses"

# --epochs: steps and the epoch column.
out="$tmp/frozen1.txt"
grep -q "^#   epochs     : 450 train rows.*shuffled per epoch, 7 steps per epoch of 64 rows, last 2 rows of each epoch's order dropped" "$out" \
  && ok "header: 450 train rows, 7 steps per epoch, 2 rows dropped" || fail "epochs header: $(grep '#   epochs' "$out")"
e=$(epochs <"$out" | tr '\n' ' ')
[ "$e" == "1 1 2 1 3 1 4 1 5 1 6 1 7 1 8 2 9 2 10 2 11 2 12 2 13 2 14 2 " ] && ok "--epochs 2: 14 steps, epoch 1 up to step 7" \
  || fail "step/epoch columns: $e"
[ "$(grep -c '^# validation: step' "$out")" == 2 ] && grep -q "^# validation: step 7 epoch 1: " "$out" \
  && ok "validation at each epoch's end" || fail "validation lines: $(grep '^# validation' "$out")"

# Real training: np 1, 2, 3 agree to the DDP tolerance; np 2 twice is bitwise.
for np in 1 2 3; do run "$np" "${T[@]}" --epochs 3 --lr 0.01 >"$tmp/train$np.txt" 2>&1 || fail "train np $np"; done
run 2 "${T[@]}" --epochs 3 --lr 0.01 >"$tmp/train2b.txt" 2>&1
[ "$(checksum <"$tmp/train2.txt")" == "$(checksum <"$tmp/train2b.txt")" ] && [ -n "$(checksum <"$tmp/train2.txt")" ] \
  && ok "np 2 twice: checksum $(checksum <"$tmp/train2.txt")" || fail "np 2 not reproducible"
for np in 2 3; do
  close "$(losses <"$tmp/train1.txt")" "$(losses <"$tmp/train$np.txt")" 1e-5 && ok "np $np losses == np 1's within 1e-5 relative" \
    || fail "np $np losses differ from np 1's beyond 1e-5: $(diff <(losses <"$tmp/train1.txt") <(losses <"$tmp/train$np.txt") | head -4)"
done

# Resume in the middle of epoch 2 (step 10 of 7-step epochs).
run 2 "${T[@]}" --epochs 3 --lr 0.01 --checkpoint-every 10 --keep 0 --checkpoint-dir "$tmp/ck" >"$tmp/full.txt" 2>&1 || fail "checkpointed run"
mkdir -p "$tmp/ck2" && cp "$tmp/ck/ckpt_0000000010.h5" "$tmp/ck2/"
for np in 2 3; do
  run "$np" "${T[@]}" --epochs 3 --lr 0.01 --checkpoint-dir "$tmp/ck2" --resume "$tmp/ck2/ckpt_0000000010.h5" >"$tmp/resumed$np.txt" 2>&1 \
    || fail "resume np $np: $(tail -3 "$tmp/resumed$np.txt")"
done
full=$(checksum <"$tmp/full.txt")
[ -n "$full" ] && [ "$(checksum <"$tmp/resumed2.txt")" == "$full" ] && ok "resume at step 10 (mid-epoch 2), np 2: checksum $full as uninterrupted" \
  || fail "resumed checksum $(checksum <"$tmp/resumed2.txt"), uninterrupted $full"
[ "$(grep '^#   validation after' "$tmp/resumed2.txt")" == "$(grep '^#   validation after' "$tmp/full.txt")" ] \
  && ok "resume np 2: final validation as uninterrupted" || fail "resumed validation differs"
close "$(losses <"$tmp/full.txt" | awk '$1 > 10')" "$(losses <"$tmp/resumed3.txt" | awk '$1 > 10')" 1e-5 \
  && ok "resume written at np 2 continued at np 3: losses within 1e-5" || fail "np 3 resume: $(losses <"$tmp/resumed3.txt" | tail -2)"

expect2() {  # expect2 "<message>" <np> <microddp args...>
  local want="$1" np="$2"; shift 2
  local out rc; out=$(run "$np" "$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" <<<"$out"; then ok "exit 2: $(grep -m1 error <<<"$out" | cut -c1-150)"
  else fail "want exit 2 and '$want', got $rc: $(head -3 <<<"$out")"; fi
}
expect2 "does not fit this run: data_source" 2 "${T[@]}" --epochs 3 --lr 0.01 --shuffle off --resume "$tmp/ck2/ckpt_0000000010.h5"
U=(train --data "$f" --width 16 --depth 2 --threads 1 --epochs 3 --lr 0.01)
expect2 "does not fit this run: data_source" 2 "${U[@]}" --global-batch 64 --val-fraction 0.2 --resume "$tmp/ck2/ckpt_0000000010.h5"
expect2 "the global batch of 460 rows is larger than the training set of 450 rows" 2 "${U[@]}" --global-batch 460 --val-fraction 0.1
expect2 "the global batch of 600 rows is larger than the training set of 500 rows" 1 "${U[@]}" --global-batch 300 --accum-steps 2
expect2 "give --epochs or --steps, not both" 1 "${U[@]}" --steps 5
expect2 "need --data" 1 train --width 16 --depth 2 --steps 2 --epochs 1

# --metrics: an epoch on every step record, a validation record per evaluation.
run 2 "${T[@]}" --epochs 2 --lr 0.01 --metrics "$tmp/m.jsonl" >/dev/null 2>&1 || fail "metrics run"
if python3 - "$tmp/m.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in recs if r["type"] == "step"]
vals = [r for r in recs if r["type"] == "validation"]
assert [r["epoch"] for r in steps] == [1] * 7 + [2] * 7, [r["epoch"] for r in steps]
assert [(v["step"], v["epoch"], v["rows"]) for v in vals] == [(7, 1, 50), (14, 2, 50)], vals
summ = [r for r in recs if r["type"] == "summary"][0]
assert summ["validation"]["step"] == 14 and summ["epochs"]["steps_per_epoch"] == 7, summ
PY
then ok "--metrics: epoch on every step, validation records at steps 7 and 14"; else fail "--metrics records"; fi

# An easy set (linear teacher, 3 classes, the largest holding 773 of 2000 rows = 39%): validation
# accuracy climbs far above that.
run 1 make-dataset "$tmp/e.h5" --samples 2000 --in-dim 12 --classes 3 --seed 7 >/dev/null
run 2 train --data "$tmp/e.h5" --width 32 --depth 2 --global-batch 50 --epochs 3 --val-fraction 0.2 --lr 0.01 --threads 1 >"$tmp/easy.txt" 2>&1 || fail "easy run"
acc=$(grep "^#   validation after" "$tmp/easy.txt" | grep -o "accuracy [0-9.]*" | awk '{print $2}')
awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 0.85) }' && ok "easy set: validation accuracy $acc >= 0.85 (majority class 0.39)" \
  || fail "easy set: validation accuracy '$acc' < 0.85"
# --val-data: a second file as the validation set.
run 1 make-dataset "$tmp/v.h5" --samples 300 --in-dim 12 --classes 3 --seed 7 >/dev/null
run 2 train --data "$tmp/e.h5" --val-data "$tmp/v.h5" --width 32 --depth 2 --global-batch 50 --steps 40 --eval-every 20 --lr 0.01 --threads 1 >"$tmp/vd.txt" 2>&1 || fail "--val-data run"
[ "$(grep -c '^# validation: step \(20\|40\) .*of 300 rows' "$tmp/vd.txt")" == 2 ] && ok "--val-data, --eval-every 20: steps 20 and 40 over 300 rows" \
  || fail "--val-data lines: $(grep '^# validation' "$tmp/vd.txt")"

echo "# $failures failure(s)"
[ "$failures" -eq 0 ]
