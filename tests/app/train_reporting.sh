#!/bin/bash
# train_reporting.sh — what `train` reports, end to end: after a resume the summary counts the
# steps this run did and says where it resumed; `inspect` counts a checkpoint's parameters as train
# does (padding apart); one rank reports overlap n/a, two a percentage; --metrics numbers steps as
# the console does, each with a timestamp and samples/s; --trace-steps keeps only its steps;
# --prefetch 0 trains the same bits as the default --prefetch 2, and the summary splits the data time;
# --precision bf16 on the CPU runs the bf16 reference; with --accum-steps the summary's samples/s
# counts every micro-batch; a count of one reads in the singular.
# (A signal stop's summary: tests/io/signal_requeue.sh.)
# Usage: train_reporting.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; shift
mpiexec="$1"; shift
mpi=("$mpiexec" -np 2 "$@")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
t=(train --width 16 --depth 2 --global-batch 16 --threads 1 --log-every 1)

# Resume: 4 steps with checkpoints, then on to 6: this run did 2 steps, from step 4.
"$bin" "${t[@]}" --steps 4 --checkpoint-every 2 --checkpoint-dir "$tmp/ck" >"$tmp/first.txt" 2>&1 || fail "first run: $(tail -3 "$tmp/first.txt")"
grep -q "^# summary: 4 steps in [0-9.]* s; loss" "$tmp/first.txt" && ok "fresh run: '# summary: 4 steps in ...'" || fail "fresh summary: $(grep summary "$tmp/first.txt")"
"$bin" "${t[@]}" --steps 6 --checkpoint-dir "$tmp/ck" --resume auto >"$tmp/resumed.txt" 2>&1 || fail "resumed run: $(tail -3 "$tmp/resumed.txt")"
line=$(grep "^# summary:" "$tmp/resumed.txt")
if grep -q "^# summary: 2 steps in [0-9.]* s (resumed at step 4; now at step 6 of 6); loss" <<<"$line"; then
  ok "resumed run: $line"
else
  fail "resumed summary: '$line'"
fi

# inspect counts the model's parameters as train does (578 at width 16, depth 2), the padded flat
# buffer apart.
trained=$(sed -n 's/^#   model .*(\([0-9]*\) parameters.*/\1/p' "$tmp/first.txt")
inspected=$("$bin" inspect "$tmp/ck/ckpt_0000000004.h5" | sed -n 's/^#   model .*(\([0-9]*\) parameters;.*/\1/p')
[ -n "$trained" ] && [ "$trained" = "$inspected" ] && ok "inspect: $inspected parameters, as train" || fail "inspect says '$inspected' parameters, train '$trained'"

# Overlap: nothing to communicate on one rank.
one=$(grep -E "^ +1 " "$tmp/first.txt" | awk '{print $8}')
grep -q "overlap n/a (1 rank: nothing to communicate)" "$tmp/first.txt" && [ "$one" = "n/a" ] \
  && ok "1 rank: overlap n/a (step line and summary)" || fail "1 rank: overlap '$one': $(grep overlap "$tmp/first.txt")"
"${mpi[@]}" "$bin" "${t[@]}" --steps 5 --metrics "$tmp/m.jsonl" --trace "$tmp/t.json" --trace-steps 2:3 >"$tmp/two.txt" 2>&1 || fail "2 ranks: $(tail -3 "$tmp/two.txt")"
two=$(grep -E "^ +2 " "$tmp/two.txt" | awk '{print $8}')
grep -Eq "overlap [0-9.]+% \(1 - exposed/busy\)" "$tmp/two.txt" && [[ "$two" =~ ^[0-9.]+%$ ]] \
  && ok "2 ranks: overlap $two" || fail "2 ranks: overlap '$two'"

# Metrics: steps 1..5 as printed, a timestamp and samples/s on each; the trace holds steps 2 and 3.
printed=$(grep -E "^ +[0-9]+ " "$tmp/two.txt" | awk '{print $1}' | tr '\n' ' ')
if python3 - "$tmp/m.jsonl" "$tmp/t.json" "$printed" <<'PY'
import datetime, json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l]
got = [s["step"] for s in steps]
want = [int(x) for x in sys.argv[3].split()]
assert got == want, f"metrics steps {got}, console printed {want}"
for s in steps:
    datetime.datetime.fromisoformat(s["timestamp"].replace("Z", "+00:00"))
    assert s["samples_per_s"] > 0, s
trace = json.load(open(sys.argv[2]))
kept = sorted({e["args"]["step"] for e in trace["traceEvents"] if "step" in e.get("args", {})})
assert kept == [2, 3], f"trace steps {kept}, want [2, 3]"
PY
then
  ok "metrics: steps $printed(as printed), timestamps, samples/s; trace: steps 2..3 only"
else
  fail "metrics or trace (above)"
fi
grep -q "^# trace: .*, steps 2..3 " "$tmp/two.txt" || fail "the trace line does not name its steps: $(grep '^# trace' "$tmp/two.txt")"

# --trace-steps: a range of steps, with --trace only.
for bad in "3:2" "0:2" "a:b" ":"; do
  out=$("$bin" "${t[@]}" --steps 2 --trace "$tmp/x.json" --trace-steps "$bad" 2>&1); rc=$?
  [ "$rc" = 2 ] && grep -q "is not a range of steps" <<<"$out" || fail "--trace-steps $bad: exit $rc: $out"
done
out=$("$bin" "${t[@]}" --steps 2 --trace-steps 1:2 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "trace" <<<"$out" && ok "--trace-steps refuses bad ranges and needs --trace" || fail "--trace-steps without --trace: exit $rc: $out"

# Input prefetching: the 2-rank run above prefetched (the default, --prefetch 2); --prefetch 0 fills
# each batch on the step's thread and trains the same bits. The summary splits the data time.
"${mpi[@]}" "$bin" "${t[@]}" --steps 5 --prefetch 0 >"$tmp/direct.txt" 2>&1 || fail "--prefetch 0: $(tail -3 "$tmp/direct.txt")"
sum2=$(grep "parameter checksum" "$tmp/two.txt"); sum0=$(grep "parameter checksum" "$tmp/direct.txt")
loss2=$(grep -E "^ +[0-9]+ " "$tmp/two.txt" | awk '{print $2}' | tr '\n' ' ')
loss0=$(grep -E "^ +[0-9]+ " "$tmp/direct.txt" | awk '{print $2}' | tr '\n' ' ')
[ -n "$sum2" ] && [ "$sum2" = "$sum0" ] && [ "$loss2" = "$loss0" ] \
  && ok "--prefetch 2 = --prefetch 0: losses ${loss2}and ${sum2#*#   }" || fail "prefetch changed the run: '$sum2' '$loss2' vs '$sum0' '$loss0'"
grep -Eq "^#   data: exposed [0-9.]+ ms/step, prepared in the background [0-9.]+ ms/step \(prefetch 2\)" "$tmp/two.txt" \
  && grep -Eq "^#   data: exposed [0-9.]+ ms/step, .*\(prefetch 0" "$tmp/direct.txt" \
  && ok "summary: $(grep '^#   data:' "$tmp/two.txt")" || fail "data summary: $(grep '^#   data' "$tmp/two.txt" "$tmp/direct.txt")"
python3 -c 'import json,sys; d=[json.loads(l) for l in open(sys.argv[1]) if "\"summary\"" in l][0]["data"]; assert d["prefetch"] == 2 and d["background_ms_per_step"] > 0, d' "$tmp/m.jsonl" \
  && ok "metrics summary: data exposed / background / prefetch" || fail "metrics summary lacks the data split"

# --precision bf16 on the CPU: the bf16 reference runs (the header says so), trains, and its losses
# differ from fp32's from the first step (the forward's operands are rounded) but stay close.
"$bin" "${t[@]}" --steps 5 --precision bf16 >"$tmp/bf16.txt" 2>&1 || fail "--precision bf16: $(tail -3 "$tmp/bf16.txt")"
"$bin" "${t[@]}" --steps 5 >"$tmp/fp32.txt" 2>&1 || fail "fp32: $(tail -3 "$tmp/fp32.txt")"
grep -q "^#   precision  : bf16 GEMM operands (the CPU reference" "$tmp/bf16.txt" && grep -q "^#   precision  : fp32" "$tmp/fp32.txt" \
  && ok "header: $(grep '^#   precision' "$tmp/bf16.txt")" || fail "precision header: $(grep '^#   precision' "$tmp/bf16.txt" "$tmp/fp32.txt")"
lb=$(grep -E "^ +[0-9]+ " "$tmp/bf16.txt" | awk '{print $2}' | tr '\n' ' ')
lf=$(grep -E "^ +[0-9]+ " "$tmp/fp32.txt" | awk '{print $2}' | tr '\n' ' ')
if python3 -c 'import sys; b=[float(x) for x in sys.argv[1].split()]; f=[float(x) for x in sys.argv[2].split()]; assert len(b)==len(f)==5 and b[0]!=f[0] and all(abs(x-y)<0.01*y for x,y in zip(b,f)), (b,f)' "$lb" "$lf"; then
  ok "bf16 losses ${lb}vs fp32 ${lf}"
else
  fail "bf16 vs fp32 losses: '$lb' vs '$lf'"
fi

# Gradient accumulation: a step holds accum x global-batch samples, in the progress lines and in the
# summary (whose samples/s is those samples over the median step time), and counts read in the
# singular where there is one.
"$bin" "${t[@]}" --steps 6 --accum-steps 4 >"$tmp/accum.txt" 2>&1 || fail "--accum-steps 4: $(tail -3 "$tmp/accum.txt")"
if python3 - "$tmp/accum.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"median step ([0-9.]+) ms \(([0-9]+) samples/s\)", text)
ms, rate = float(m.group(1)), float(m.group(2))
# Global batch 16, 4 micro-batches: 64 samples per step. The printed median is rounded to 3 decimals.
lo, hi = 64 / ((ms + 0.0005) * 1e-3), 64 / (max(ms - 0.0005, 1e-9) * 1e-3)
assert lo - 1 <= rate <= hi + 1, (rate, lo, hi)
PY
then ok "--accum-steps 4: the summary's samples/s counts all 4 micro-batches"
else fail "--accum-steps 4: $(grep 'median step' "$tmp/accum.txt")"; fi
grep -q "^#   communication: 1 collective, " "$tmp/accum.txt" && grep -q "^#   checks: 1 divergence check passed" "$tmp/accum.txt" &&
  ! grep -Eq "(^|[^0-9])1 (collectives|divergence checks|sync checks|steps)" "$tmp/accum.txt" \
  && ok "singular counts: '1 collective', '1 divergence check'" || fail "plurals: $(grep -E ' 1 [a-z]' "$tmp/accum.txt")"

[ "$failures" -eq 0 ] && echo "train reporting: OK"
[ "$failures" -eq 0 ]
