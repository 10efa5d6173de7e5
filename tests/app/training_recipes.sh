#!/bin/bash
# training_recipes.sh — learning-rate schedules, the best model and early stopping, end to end
# (docs/training_recipes.md):
#   * --lr-schedule cosine --warmup-steps W: every step's "lr" in --metrics is the closed form
#     (computed here in Python from the formula, to float32's precision), the progress lines show
#     it, the header says the plan; a step schedule likewise;
#   * the schedule is in the checkpoint: a run interrupted mid-warmup or mid-decay and resumed ends
#     bit for bit where the uninterrupted run ends (same np; parameter checksum and every loss), on
#     another np within 1e-5 relative (gradients summed in another order); a resume whose default
#     --decay-steps (the run's steps) moved is refused naming decay_steps;
#   * every strategy, ZeRO and gradient compression run the same rates (the lr sequence is identical);
#   * --save-best val_accuracy keeps best.h5 at the step of the best validation record, and
#     `evaluate` of best.h5 on the held-out rows (make-dataset --split writes them) reproduces that
#     record's accuracy exactly; the summary names it;
#   * --early-stop-patience K stops after K evaluations without improvement, says why, exits 0,
#     checkpoints, and a resume then has nothing to do; --save-best without a validation set is exit 2.
# Usage: training_recipes.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; shift
mpiexec="$1"; shift
mpi_flags=("$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { local np=$1; shift; timeout 120 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "$@"; }
losses() { grep -E '^ +[0-9]+ ' | awk '{print $1, $2}'; }
checksum() { grep -o "parameter checksum [0-9a-f]*" | awk '{print $3}'; }
lrs() { /usr/bin/python3 -c 'import json,sys; print(" ".join(repr(r["lr"]) for r in map(json.loads, open(sys.argv[1])) if r["type"] == "step"))' "$1"; }
close() {
  paste -d' ' <(echo "$1") <(echo "$2") | awk -v tol="$3" '
    { if ($1 != $3) bad = 1; d = $2 - $4; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2; if (d > tol * m + 1e-6) bad = 1; n++ }
    END { exit (bad || n == 0) }'
}

T=(train --width 16 --depth 2 --global-batch 32 --threads 1 --log-every 1 --optimizer adam --lr 0.01)
C=(--lr-schedule cosine --warmup-steps 8 --min-lr 0.001)

# ---- the rate of every step is the closed form ----
run 2 "${T[@]}" "${C[@]}" --steps 24 --metrics "$tmp/cos.jsonl" >"$tmp/cos.txt" 2>&1 || fail "cosine run: $(tail -3 "$tmp/cos.txt")"
if /usr/bin/python3 - "$tmp/cos.jsonl" <<'PY'
import json, math, struct, sys
f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]
base, low, W, D = f32(0.01), f32(0.001), 8, 24  # D: the run's steps (--decay-steps not given)
got = [r["lr"] for r in map(json.loads, open(sys.argv[1])) if r["type"] == "step"]
want = [f32(base * (s + 1) / W) if s < W else f32(low + (base - low) * (1 + math.cos(math.pi * (s - W) / (D - W))) / 2)
        for s in range(D)]
assert got == want, list(zip(got, want))
PY
then ok "cosine with 8 warmup steps: all 24 rates equal the closed form"; else fail "cosine rates differ from the closed form"; fi
grep -q "#   lr schedule: cosine from 0.01 to 0.001 over steps 9..24 after 8 linear warmup steps" "$tmp/cos.txt" &&
  [ "$(grep -E '^ +8 ' "$tmp/cos.txt" | awk '{print $NF}')" = "1.0000e-02" ] \
  && ok "header and progress lines show the plan and each step's rate" || fail "no lr column or header: $(grep -E 'lr|^ +8 ' "$tmp/cos.txt" | head -3)"
run 1 "${T[@]}" --lr-schedule step --lr-milestones 3,5 --lr-gamma 0.5 --steps 6 --metrics "$tmp/step.jsonl" >/dev/null 2>&1
[ "$(lrs "$tmp/step.jsonl")" = "0.009999999776482582 0.009999999776482582 0.009999999776482582 0.004999999888241291 0.004999999888241291 0.0024999999441206455" ] \
  && ok "step schedule: 0.01 x 0.5 after steps 3 and 5" || fail "step schedule rates: $(lrs "$tmp/step.jsonl")"
run 1 "${T[@]}" --lr-schedule cosine --lr-milestones 3 --steps 2 >"$tmp/bad.txt" 2>&1
[ $? -eq 2 ] && grep -q "lr-milestones applies to --lr-schedule step, not cosine" "$tmp/bad.txt" \
  && ok "a setting of another schedule: exit 2" || fail "--lr-milestones with cosine: $(grep -m1 error "$tmp/bad.txt")"

run 2 "${T[@]}" --lr-schedule cosine --warmup-steps 50 --steps 10 >"$tmp/short.txt" 2>&1
[ $? -eq 2 ] && grep -q "decay-steps 10 must exceed --warmup-steps 50" "$tmp/short.txt" && ! grep -q MPI_ABORT "$tmp/short.txt" \
  && ok "a warmup longer than the run: exit 2 on every rank, no abort" || fail "warmup > steps: $(head -3 "$tmp/short.txt")"

# ---- bitwise resume mid-warmup and mid-decay; another np within tolerance ----
R=("${T[@]}" "${C[@]}" --decay-steps 24)
run 2 "${R[@]}" --steps 24 >"$tmp/straight.txt" 2>&1 || fail "straight run"
for at in 5 14; do
  d="$tmp/ck$at"
  run 2 "${R[@]}" --steps "$at" --checkpoint-every "$at" --checkpoint-dir "$d" >/dev/null 2>&1 || fail "run to $at"
  run 2 "${R[@]}" --steps 24 --checkpoint-dir "$d" --resume auto >"$tmp/resumed$at.txt" 2>&1 || fail "resume at $at"
  run 3 "${R[@]}" --steps 24 --checkpoint-dir "$d" --resume "$d/ckpt_$(printf %010d "$at").h5" \
    --checkpoint-every 1000 >"$tmp/np3_$at.txt" 2>&1 || fail "resume at $at on 3 ranks"
  want=$(losses <"$tmp/straight.txt" | awk -v a="$at" '$1 > a')
  where=$([ "$at" -lt 8 ] && echo "mid-warmup" || echo "mid-decay")
  [ -n "$want" ] && [ "$(losses <"$tmp/resumed$at.txt")" = "$want" ] &&
    [ "$(checksum <"$tmp/resumed$at.txt")" = "$(checksum <"$tmp/straight.txt")" ] \
    && ok "resume after step $at ($where): bitwise (losses, checksum $(checksum <"$tmp/straight.txt"))" \
    || fail "resume after step $at ($where) differs: $(diff <(echo "$want") <(losses <"$tmp/resumed$at.txt") | head -3)"
  close "$want" "$(losses <"$tmp/np3_$at.txt")" 1e-5 && ok "resume after step $at on 3 ranks: within 1e-5" \
    || fail "np 3 resume after step $at: $(diff <(echo "$want") <(losses <"$tmp/np3_$at.txt") | head -3)"
done
run 2 "${T[@]}" "${C[@]}" --steps 30 --checkpoint-dir "$tmp/ck14" --resume auto >"$tmp/moved.txt" 2>&1
[ $? -eq 2 ] && grep -q "decay_steps = 24 (this run: 30)" "$tmp/moved.txt" \
  && ok "another --steps with the default --decay-steps: refused naming decay_steps" \
  || fail "a moved decay accepted: $(grep -m1 error "$tmp/moved.txt")"

# ---- every strategy, ZeRO and compression run the same rates ----
ref=$(lrs "$tmp/cos.jsonl")
for extra in "--strategy naive" "--strategy flat --shard optimizer" "--grad-compression bf16"; do
  # shellcheck disable=SC2086
  run 2 "${T[@]}" "${C[@]}" --steps 24 $extra --metrics "$tmp/x.jsonl" --metrics-mode overwrite >"$tmp/x.txt" 2>&1 ||
    fail "$extra: $(tail -2 "$tmp/x.txt")"
  # bf16 gradients move the losses by ~1e-4 relative; a wrong rate moves them by far more.
  [ "$(lrs "$tmp/x.jsonl")" = "$ref" ] && close "$(losses <"$tmp/cos.txt")" "$(losses <"$tmp/x.txt")" 1e-3 \
    && ok "$extra: the same 24 rates, and it trains as the default run does" || fail "$extra: other rates or losses"
done

# ---- the best model and early stopping ----
run 1 make-dataset "$tmp/d.h5" --samples 600 --in-dim 12 --classes 3 --seed 5 >/dev/null || fail "make-dataset"
run 1 make-dataset --split --val-fraction 0.2 "$tmp/d.h5" "$tmp/train.h5" "$tmp/val.h5" >/dev/null || fail "make-dataset --split"
D=(train --data "$tmp/d.h5" --val-fraction 0.2 --width 16 --depth 2 --global-batch 32 --threads 1 --log-every 5)
run 2 "${D[@]}" --steps 60 --eval-every 5 --lr 0.05 --save-best val_accuracy --checkpoint-dir "$tmp/best" \
  --metrics "$tmp/best.jsonl" >"$tmp/best.txt" 2>&1 || fail "--save-best run: $(tail -3 "$tmp/best.txt")"
best=$(/usr/bin/python3 -c '
import json, sys
vals = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "validation"]
b = max(vals, key=lambda r: (r["accuracy"], -r["step"]))  # the first of the highest
assert [r["step"] for r in vals if r["best"]][-1] == b["step"], vals
print(b["step"], b["correct"], b["rows"])' "$tmp/best.jsonl")
read -r bstep bcorrect brows <<<"$best"
saved=$("$bin" inspect "$tmp/best/best.h5" | sed -n 's/^#   steps_done \([0-9]*\),.*/\1/p')
got=$(run 2 evaluate --checkpoint "$tmp/best/best.h5" --data "$tmp/val.h5" --json 2>/dev/null | sed -n 's/^  "correct": \([0-9]*\),*$/\1/p')
[ -n "$bstep" ] && [ "$saved" = "$bstep" ] && [ "$got" = "$bcorrect" ] &&
  grep -q "#   best: val_accuracy .* at step $bstep, $tmp/best/best.h5" "$tmp/best.txt" \
  && ok "best.h5 is the model of step $bstep ($bcorrect of $brows held-out rows right, as evaluate finds on --split's VAL.h5)" \
  || fail "best.h5: step '$saved' (want '$bstep'), evaluate '$got' correct (want '$bcorrect')"
run 2 "${D[@]}" --steps 60 --eval-every 2 --early-stop-patience 2 --early-stop-min-delta 1 \
  --checkpoint-every 50 --checkpoint-dir "$tmp/es" >"$tmp/es.txt" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "# early stop after step 6: val_loss has not improved on .* (step 2) by more than 1 in 2 evaluations" "$tmp/es.txt" &&
  grep -q "stopped early at step 6 of 60" "$tmp/es.txt" && [ -f "$tmp/es/ckpt_0000000006.h5" ] \
  && ok "early stop after 2 evaluations without improvement: exit 0, step 6, checkpointed" \
  || fail "early stop: exit $rc: $(grep -E 'early|summary' "$tmp/es.txt")"
run 2 "${D[@]}" --steps 60 --eval-every 2 --early-stop-patience 2 --early-stop-min-delta 1 \
  --checkpoint-every 50 --checkpoint-dir "$tmp/es" --resume auto >"$tmp/es2.txt" 2>&1 &&
  grep -q "nothing to do: the run stopped early at step 6" "$tmp/es2.txt" \
  && ok "a resume of an early-stopped run has nothing to do" || fail "resume after early stop: $(tail -2 "$tmp/es2.txt")"
run 1 "${T[@]}" --steps 2 --save-best val_loss >"$tmp/nv.txt" 2>&1
[ $? -eq 2 ] && grep -q "save-best needs a validation set" "$tmp/nv.txt" && ok "--save-best without validation: exit 2" \
  || fail "--save-best without validation: $(grep -m1 error "$tmp/nv.txt")"

echo "# $failures failure(s)"
[ "$failures" -eq 0 ]
