#!/bin/bash
# plot_metrics.sh — jobs/plot_metrics.py draws what the metrics say (the data behind the figure is
# checked, not the pixels):
#   * a hand-written file with two runs, epochs, validations and a resume: only the last run is
#     drawn; the records the resume superseded are replaced by the ones computed after it; the
#     per-epoch mean loss is the mean of each epoch's steps; the best evaluation is marked;
#   * a real `train --metrics` run with a schedule and a validation set: one point per step, the
#     rates and gradient norms of the file; --compare draws two runs with their labels;
#   * the output is a PNG; several files without --compare are refused.
# Needs Debian's python3-matplotlib; skipped (exit 77) without.
# Usage: plot_metrics.sh <microddp> <mpiexec> [mpiexec preflags...]
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$1"; mpiexec="$2"; shift 2; mpi_flags=("$@")
plot="$here/../../jobs/plot_metrics.py"
python=""
for p in "${PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 && "$p" -c "import matplotlib" 2>/dev/null && { python="$p"; break; }
done
[ -n "$python" ] || { echo "SKIP: no Python 3 with matplotlib (install python3-matplotlib, or set PYTHON)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

cat >"$tmp/hand.jsonl" <<'EOF2'
{"type":"step","step":1,"loss":9.0,"lr":0.1,"grad_norm":1.0,"step_ms":1.0}
{"type":"summary","final_loss":9.0}
{"type":"start","run_id":"b"}
{"type":"step","step":1,"loss":4.0,"lr":0.1,"grad_norm":2.0,"step_ms":1.0,"epoch":1}
{"type":"step","step":2,"loss":3.0,"lr":0.1,"grad_norm":2.0,"step_ms":1.0,"epoch":1}
{"type":"validation","step":2,"loss":3.5,"accuracy":0.5,"best":true}
{"type":"step","step":3,"loss":2.0,"lr":0.05,"grad_norm":null,"step_ms":1.0,"epoch":2}
{"type":"step","step":4,"loss":99.0,"lr":0.05,"grad_norm":2.0,"step_ms":1.0,"epoch":2}
{"type":"validation","step":4,"loss":99.0,"accuracy":0.1,"best":false}
{"type":"resume","run_id":"b","step":3,"superseded_steps":1}
{"type":"step","step":4,"loss":1.0,"lr":0.05,"grad_norm":2.0,"step_ms":2.0,"epoch":2}
{"type":"validation","step":4,"loss":1.5,"accuracy":0.75,"best":true}
{"type":"step","step":5,"loss":0.5,"lr":0.01,"grad_norm":1.0,"step_ms":2.0,"epoch":3}
{"type":"summary","best":{"metric":"val_accuracy","value":0.75,"step":4}}
EOF2
if "$python" "$plot" "$tmp/hand.jsonl" -o "$tmp/hand.png" --data-out "$tmp/hand.json" >/dev/null &&
   "$python" - "$tmp/hand.json" "$tmp/hand.png" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))["runs"]
assert len(r) == 1, r
r = r[0]
assert r["step"] == [1, 2, 3, 4, 5] and r["loss"] == [4.0, 3.0, 2.0, 1.0, 0.5], r
assert r["epoch"] == [1, 2, 3] and r["epoch_mean_loss"] == [3.5, 1.5, 0.5] and r["epoch_end_step"] == [2, 4, 5], r
assert r["val_step"] == [2, 4] and r["val_accuracy"] == [0.5, 0.75] and r["best_step"] == 4, r
assert r["lr"] == [0.1, 0.1, 0.05, 0.05, 0.01] and math.isnan(r["grad_norm"][2]) and r["step_ms"][3] == 2.0, r
assert open(sys.argv[2], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
PY
then ok "hand-written file: the last run, the resume's records win, epoch means 3.5 1.5 0.5, best at step 4, a PNG"
else fail "the hand-written file's series"; fi

run() { local np=$1; shift; timeout 120 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "$@"; }
run 1 make-dataset "$tmp/d.h5" --samples 400 --in-dim 8 --classes 2 >/dev/null 2>&1 || fail "make-dataset"
for s in constant cosine; do
  run 2 train --data "$tmp/d.h5" --val-fraction 0.25 --epochs 3 --width 16 --depth 2 --global-batch 30 --threads 1 \
    --lr-schedule "$s" --save-best val_loss --checkpoint-dir "$tmp/ck_$s" --metrics "$tmp/$s.jsonl" >"$tmp/$s.txt" 2>&1 ||
    fail "train $s: $(tail -2 "$tmp/$s.txt")"
done
if "$python" "$plot" --compare "$tmp/constant.jsonl" "$tmp/cosine.jsonl" --labels constant,cosine -o "$tmp/both.png" \
     --data-out "$tmp/both.json" >/dev/null &&
   "$python" - "$tmp/both.json" "$tmp/cosine.jsonl" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert [r["label"] for r in runs] == ["constant", "cosine"], runs
recs = [json.loads(l) for l in open(sys.argv[2])]
steps = [r for r in recs if r["type"] == "step"]
c = runs[1]
assert c["step"] == [r["step"] for r in steps] == list(range(1, 31)), c["step"]
assert c["lr"] == [r["lr"] for r in steps] and c["grad_norm"] == [r["grad_norm"] for r in steps]
assert c["lr"][0] > c["lr"][-1] and len(set(runs[0]["lr"])) == 1, (c["lr"], runs[0]["lr"])
assert c["epoch"] == [1, 2, 3] and len(c["val_step"]) == 3 and c["best_step"] in c["val_step"], c
PY
then ok "two real runs (--compare): 30 steps each, the file's rates and norms, 3 epochs, 3 validations, the best marked"
else fail "the real runs' series"; fi
"$python" "$plot" "$tmp/constant.jsonl" "$tmp/cosine.jsonl" -o "$tmp/x.png" >/dev/null 2>&1
[ $? -ne 0 ] && [ ! -e "$tmp/x.png" ] && ok "two files without --compare: refused" || fail "two files without --compare drew"

echo "# $failures failure(s)"
[ "$failures" -eq 0 ]
