#!/bin/bash
# run_safety.sh — nothing a run made is lost, and a trained model starts another run
# (docs/checkpoint_format.md, "Resume rules"; docs/training_recipes.md):
#   * --resume auto in a directory whose checkpoints do not fit the run (another --lr, --seed,
#     --global-batch) refuses: exit 2, naming the setting and both values, and every checkpoint
#     is still there, byte for byte (today's main skipped them, started over and its rotation
#     deleted them);
#   * a fresh run (no --resume) in a directory that holds another run's checkpoints refuses (exit 2,
#     nothing deleted); --resume never --overwrite deletes them and runs;
#   * --metrics appends: a resumed run keeps the interrupted run's records, adds a resume record
#     naming the checkpoint's step and how many logged steps were computed again; a run with
#     nothing to do leaves the file byte for byte; a fresh run appends after a start record;
#     --metrics-mode overwrite truncates;
#   * --allow-changed lr continues with the new rate (the checkpoint's plan_history says what
#     changed at which step: inspect shows it); --allow-changed seed is exit 2 saying why;
#   * --init-from a checkpoint or its export starts a new run from those weights (fresh optimizer,
#     step 0: its first loss is `evaluate`'s of that checkpoint on the same rows), the same bits from
#     either file; a model of another shape is exit 2 naming the layer and both shapes.
# Usage: run_safety.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; shift
mpiexec="$1"; shift
mpi_flags=("$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { local np=$1; shift; timeout 120 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "$@"; }
fingerprint() { (cd "$1" && ls -1 && cat -- * | cksum); }  # names and bytes of a directory's files
first_loss() { grep -E '^ +1 ' "$1" | awk '{print $2}'; }

T=(train --width 16 --depth 2 --global-batch 32 --threads 1 --log-every 1)
ck="$tmp/ck"

# ---- --resume auto refuses a checkpoint that does not fit; nothing is deleted ----
run 2 "${T[@]}" --steps 12 --checkpoint-every 4 --checkpoint-dir "$ck" --resume auto --lr 0.001 \
  --metrics "$tmp/m.jsonl" >"$tmp/a.txt" 2>&1 || fail "first run: $(tail -3 "$tmp/a.txt")"
before=$(fingerprint "$ck")
for change in "--lr 0.01:lr = 0.001 (this run: 0.01)" "--seed 7:seed = 1 (this run: 7)" \
              "--global-batch 48:global_batch = 32 (this run: 48)"; do
  opt=${change%%:*} want=${change#*:}
  # shellcheck disable=SC2086
  run 2 "${T[@]}" --steps 24 --checkpoint-every 4 --checkpoint-dir "$ck" --resume auto --lr 0.001 $opt \
    >"$tmp/b.txt" 2>&1
  rc=$?
  if [ $rc -eq 2 ] && grep -qF "$want" "$tmp/b.txt" && grep -q "Nothing was loaded or deleted" "$tmp/b.txt" &&
     [ "$(fingerprint "$ck")" = "$before" ]; then
    ok "resume auto with $opt: exit 2 naming '$want', every checkpoint kept"
  else
    fail "resume auto with $opt: exit $rc, checkpoints now $(ls "$ck" | tr '\n' ' '): $(grep -m1 error "$tmp/b.txt")"
  fi
done

# ---- a fresh run does not write into another run's directory without --overwrite ----
run 2 "${T[@]}" --steps 8 --checkpoint-every 4 --checkpoint-dir "$ck" --lr 0.01 >"$tmp/c.txt" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "holds 3 checkpoints of another run" "$tmp/c.txt" && [ "$(fingerprint "$ck")" = "$before" ] \
  && ok "fresh run in another run's directory: exit 2, nothing deleted" \
  || fail "fresh run in another run's directory: exit $rc: $(grep -m1 error "$tmp/c.txt")"
cp -r "$ck" "$tmp/ck_kept"
run 2 "${T[@]}" --steps 8 --checkpoint-every 4 --checkpoint-dir "$tmp/ck_kept" --resume never --overwrite --lr 0.01 \
  >"$tmp/d.txt" 2>&1 || fail "--resume never --overwrite: $(grep -m1 error "$tmp/d.txt")"
grep -q "# overwrite: deleted 3 checkpoints of another run" "$tmp/d.txt" &&
  [ "$(ls "$tmp/ck_kept" | tr '\n' ' ')" = "ckpt_0000000004.h5 ckpt_0000000008.h5 " ] \
  && ok "--resume never --overwrite: the other run's 3 checkpoints deleted, this run's written" \
  || fail "--overwrite: $(ls "$tmp/ck_kept" | tr '\n' ' ')"
run 2 "${T[@]}" --steps 8 --resume auto --overwrite >"$tmp/e.txt" 2>&1
[ $? -eq 2 ] && grep -q "overwrite starts the run over" "$tmp/e.txt" && ok "--resume auto --overwrite: exit 2" \
  || fail "--resume auto --overwrite accepted"

# ---- metrics: appended on resume, marked; untouched when there is nothing to do ----
# The interrupted run: steps 1-12 logged, its newest checkpoint (12) lost, so the resume starts
# after step 8 and steps 9-12 are computed again.
mkdir "$tmp/ck2" && cp "$ck"/ckpt_000000000{4,8}.h5 "$tmp/ck2/"
cp "$tmp/m.jsonl" "$tmp/m_before.jsonl"
run 2 "${T[@]}" --steps 16 --checkpoint-every 4 --checkpoint-dir "$tmp/ck2" --resume auto --lr 0.001 \
  --metrics "$tmp/m.jsonl" >"$tmp/f.txt" 2>&1 || fail "resumed run: $(tail -3 "$tmp/f.txt")"
if /usr/bin/python3 - "$tmp/m.jsonl" "$tmp/m_before.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
old = open(sys.argv[2]).read()
assert open(sys.argv[1]).read().startswith(old), "the interrupted run's records were not kept"
types = [r["type"] for r in recs]
assert types[0] == "start" and types.count("resume") == 1, types
res = recs[types.index("resume")]
assert res["step"] == 8 and res["superseded_steps"] == 4, res
steps = [r["step"] for r in recs if r["type"] == "step"]
assert steps == list(range(1, 13)) + list(range(9, 17)), steps
PY
then ok "metrics appended on resume: steps 1-12, a resume record (step 8, 4 superseded), steps 9-16"
else fail "metrics after the resume: $(head -c 600 "$tmp/m.jsonl")"; fi
cp "$tmp/m.jsonl" "$tmp/m_done.jsonl"
run 2 "${T[@]}" --steps 16 --checkpoint-every 4 --checkpoint-dir "$tmp/ck2" --resume auto --lr 0.001 \
  --metrics "$tmp/m.jsonl" >"$tmp/g.txt" 2>&1 || fail "nothing-to-do run failed"
grep -q "nothing to do" "$tmp/g.txt" && cmp -s "$tmp/m.jsonl" "$tmp/m_done.jsonl" \
  && ok "nothing to do: the metrics file is unchanged" || fail "nothing to do changed the metrics file"
run 1 "${T[@]}" --steps 3 --metrics "$tmp/m.jsonl" >/dev/null 2>&1 || fail "fresh run appending"
[ "$(head -c "$(stat -c %s "$tmp/m_done.jsonl")" "$tmp/m.jsonl" | cksum)" = "$(cksum <"$tmp/m_done.jsonl")" ] &&
  [ "$(tail -5 "$tmp/m.jsonl" | head -1 | grep -c '"type":"start"')" = 1 ] \
  && ok "a fresh run appends after a start record" || fail "a fresh run did not append"
run 1 "${T[@]}" --steps 3 --metrics "$tmp/m.jsonl" --metrics-mode overwrite >/dev/null 2>&1
[ "$(wc -l <"$tmp/m.jsonl")" = 5 ] && ok "--metrics-mode overwrite: start, 3 steps, summary" \
  || fail "--metrics-mode overwrite left $(wc -l <"$tmp/m.jsonl") lines"
printf '{"type":"step","ste' >>"$tmp/m.jsonl"  # the half line a run killed while writing leaves
run 1 "${T[@]}" --steps 2 --metrics "$tmp/m.jsonl" >/dev/null 2>&1 || fail "appending after a half line"
tail -4 "$tmp/m.jsonl" | /usr/bin/python3 -c 'import json, sys; assert [json.loads(l)["type"] for l in sys.stdin] == ["start", "step", "step", "summary"]' \
  && ok "after a half line left by a killed run, the next run's records start on lines of their own" \
  || fail "appending after a half line: $(tail -c 300 "$tmp/m.jsonl")"

# ---- --allow-changed: the learning-rate plan may change, nothing else ----
run 2 "${T[@]}" --steps 16 --checkpoint-every 4 --checkpoint-dir "$ck" --resume auto --lr 0.002 \
  --allow-changed lr >"$tmp/h.txt" 2>&1 || fail "--allow-changed lr: $(grep -m1 error "$tmp/h.txt")"
grep -q "# resume: --allow-changed: step 12: lr 0.001 -> 0.002" "$tmp/h.txt" &&
  "$bin" inspect "$ck/ckpt_0000000016.h5" | grep -q "history: step 12: lr 0.001 -> 0.002" \
  && ok "--allow-changed lr: resumed at step 12 with lr 0.002, recorded in the checkpoint" \
  || fail "--allow-changed lr: $(grep resume "$tmp/h.txt")"
run 2 "${T[@]}" --steps 20 --checkpoint-dir "$ck" --resume auto --seed 3 --allow-changed lr,seed >"$tmp/i.txt" 2>&1
[ $? -eq 2 ] && grep -q "allow-changed seed: seed changes what has been computed so far" "$tmp/i.txt" \
  && ok "--allow-changed seed: exit 2, why" || fail "--allow-changed seed: $(grep -m1 error "$tmp/i.txt")"

# ---- --init-from: a new run from a checkpoint's or an export's weights ----
# Its first step's loss is the loss of the loaded weights on the first batch: with a file of exactly
# that batch, `evaluate` of the checkpoint computes the same number (to its 1e-6 print; the two sum
# the rows in different orders).
"$bin" export "$ck/ckpt_0000000016.h5" "$tmp/model.h5" >/dev/null || fail "export"
run 1 make-dataset "$tmp/batch.h5" --samples 32 --in-dim 16 --classes 2 --seed 9 >/dev/null || fail "make-dataset"
want=$(run 1 evaluate --checkpoint "$ck/ckpt_0000000016.h5" --data "$tmp/batch.h5" --json 2>/dev/null |
       sed -n 's/^  "loss": \([0-9.e+-]*\),*$/\1/p')
for src in "$ck/ckpt_0000000016.h5" "$tmp/model.h5"; do
  run 2 "${T[@]}" --data "$tmp/batch.h5" --shuffle off --steps 2 --checkpoint-every 2 \
    --checkpoint-dir "$tmp/ft_$(basename "$src")" --init-from "$src" --optimizer sgd --lr 0.01 \
    >"$tmp/j_$(basename "$src").txt" 2>&1 || fail "--init-from $src: $(grep -m1 error "$tmp/j_$(basename "$src").txt")"
done
a=$(first_loss "$tmp/j_ckpt_0000000016.h5.txt") b=$(first_loss "$tmp/j_model.h5.txt")
if [ -n "$a" ] && [ "$a" = "$b" ] && [ -n "$want" ] && awk -v a="$a" -v w="$want" 'BEGIN { d = a - w; exit !(d < 2e-6 && d > -2e-6) }'; then
  ok "--init-from: first loss $a from the checkpoint and from its export = evaluate's $want"
else fail "--init-from first losses: checkpoint '$a', export '$b', evaluate '$want'"; fi
"$bin" inspect "$tmp/ft_ckpt_0000000016.h5/ckpt_0000000002.h5" | grep -q "history: step 0: weights from .*ckpt_0000000016.h5 (checkpoint, after 16 steps)" \
  && ok "--init-from: recorded in the new run's checkpoint" || fail "--init-from not in the checkpoint's history"
run 2 "${T[@]}" --width 24 --steps 2 --checkpoint-dir "$tmp/ft_bad" --init-from "$tmp/model.h5" >"$tmp/k.txt" 2>&1
[ $? -eq 2 ] && grep -q "layer_00/weight has shape (16, 16), this run's model needs (24, 24)" "$tmp/k.txt" \
  && ok "--init-from into another shape: exit 2 naming the layer" || fail "--init-from shape mismatch: $(grep -m1 error "$tmp/k.txt")"

echo "# $failures failure(s)"
[ "$failures" -eq 0 ]
