#!/bin/bash
# compare_train_runs.sh — do two `microddp` binaries run `train` the same way, around the step? Runs a
# fixed set of short runs that exercise the run around the trainer (data files and epochs,
# validation, the best model, early stopping, checkpoints and resume, the metrics file, the trace,
# the run's ends) with each binary, each in a directory of its own with the same relative paths, and
# compares, run by run, everything that does not measure time:
#   stdout   every line, with each number that is a time (followed by ms, s, ms/step, samples/s, or a
#            percentage of one) and the step table's timing columns replaced by "T";
#   metrics  the --metrics JSONL with timing fields (*_ms, *_s, timestamp, overlap, samples_per_s)
#            and the run id (random per run) removed;
#   trace    the --trace file's events without their times (name, category, phase, rank, args);
#   ckpts    every checkpoint (and best.h5) as `microddp inspect` lists its datasets with checksums;
#   files    the exit codes, and which files each run left.
# tests/app/compare_builds.sh (strategies, backends, shards, compression) compares the step itself.
#
# Usage: tests/app/compare_train_runs.sh OLD_BIN NEW_BIN [KEEP_DIR]
# Exit 0: every run identical; 1: some differ (named, with a diff); 2: usage.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: compare_train_runs.sh OLD_BIN NEW_BIN [KEEP_DIR]" >&2; exit 2; }
old_bin=$(realpath "$1")
new_bin=$(realpath "$2")
for b in "$old_bin" "$new_bin"; do [ -x "$b" ] || { echo "compare_train_runs.sh: $b is not an executable" >&2; exit 2; }; done
if [ -n "${3:-}" ]; then mkdir -p "$3"; dir=$(realpath "$3"); else dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT; fi
mpiexec=(mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export MICRODDP_DEVICE=cpu

tiny="--width 16 --depth 3 --global-batch 20 --threads 1 --log-every 1"
# One scenario: NAME|COMMANDS (train's arguments; ';' separates runs of the same scenario, all in one
# directory: a resume follows the run it resumes). Data files: train.h5 (200 rows x 8, 3 classes) and
# val.h5 (60 rows of the same task).
scenarios=(
  "default|train --steps 6 --threads 1"
  "metrics-layer-events|train $tiny --steps 5 --metrics m.jsonl --layer-events"
  "val-fraction-epochs|train $tiny --data train.h5 --val-fraction 0.2 --epochs 3 --metrics m.jsonl"
  "val-data-eval-every-schedule|train $tiny --data train.h5 --val-data val.h5 --eval-every 3 --steps 8 --lr-schedule cosine --warmup-steps 2 --shuffle off --metrics m.jsonl"
  "save-best|train $tiny --data train.h5 --val-fraction 0.25 --epochs 4 --save-best val_accuracy --checkpoint-dir ck --checkpoint-every 5 --metrics m.jsonl"
  "early-stop|train $tiny --data train.h5 --val-fraction 0.25 --steps 40 --eval-every 1 --early-stop-patience 2 --early-stop-min-delta 0.5 --checkpoint-dir ck --checkpoint-every 4 --metrics m.jsonl;train $tiny --data train.h5 --val-fraction 0.25 --steps 40 --eval-every 1 --early-stop-patience 2 --early-stop-min-delta 0.5 --checkpoint-dir ck --checkpoint-every 4 --resume auto --metrics m.jsonl"
  "resume|train $tiny --steps 4 --checkpoint-dir ck --checkpoint-every 2 --metrics m.jsonl;train $tiny --steps 7 --checkpoint-dir ck --checkpoint-every 2 --resume auto --metrics m.jsonl;train $tiny --steps 7 --checkpoint-dir ck --resume auto --metrics m.jsonl"
  "resume-epochs-best|train $tiny --data train.h5 --val-fraction 0.2 --epochs 2 --save-best val_loss --checkpoint-dir ck --checkpoint-every 3 --metrics m.jsonl;train $tiny --data train.h5 --val-fraction 0.2 --epochs 4 --save-best val_loss --checkpoint-dir ck --checkpoint-every 3 --resume auto --metrics m.jsonl"
  "trace|train $tiny --steps 5 --trace t.json --trace-steps 2:3 --metrics m.jsonl --metrics-mode overwrite"
  "accum-compression-clip|train $tiny --steps 4 --accum-steps 2 --grad-compression powersgd --powersgd-rank 1 --clip-grad-norm 0.5 --check-every 2 --metrics m.jsonl"
  "init-from|train $tiny --steps 3 --checkpoint-dir a --checkpoint-every 3;train $tiny --steps 3 --checkpoint-dir b --init-from a/ckpt_0000000003.h5 --metrics m.jsonl"
  "bad-data|train $tiny --data notdata.txt"
  "inspect-evaluate|train $tiny --steps 2 --in-dim 8 --classes 3 --checkpoint-dir ck --checkpoint-every 2;inspect train.h5;evaluate --checkpoint ck/ckpt_0000000002.h5 --data train.h5 --threads 1;evaluate --checkpoint ck/ckpt_0000000002.h5 --data notdata.txt --threads 1"
)

# Times in the console output, masked; the step table keeps step, loss (and epoch, lr columns).
mask_stdout() {
  awk '/^ +[0-9]+ +[-0-9.naif]+ / { line = "step " $1 " " $2; for (i = 11; i <= NF; i++) line = line " " $i; print line; next }
       { print }' "$1" |
    sed -E 's/[0-9]+(\.[0-9]+)?( ?)(ms\/step|ms|s|samples\/s)\b/T\2\3/g; s/[0-9]+(\.[0-9]+)?%/T%/g; s/\([0-9]+ samples\/s\)/(T samples\/s)/g' |
    # The summary's timing lines: every decimal there is a time (or a share of one) but the MiB.
    perl -pe 'if (/^#   (median step|data: exposed|checks:|desync:|communication:|compression: .*encode)/) { s/\b\d+\.\d+\b(?! MiB)/T/g }'
}

strip_metrics() {
  python3 - "$1" << 'EOF'
import json, re, sys
timing = re.compile(r'(_ms|_s|_ns|_us|per_s|ms_per_step|timestamp|overlap|run_id)$')
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if not timing.search(k)}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
for line in open(sys.argv[1]):
    line = line.strip()
    if line:
        print(json.dumps(strip(json.loads(line)), sort_keys=True))
EOF
}

strip_trace() {
  python3 - "$1" << 'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
events = t["traceEvents"] if isinstance(t, dict) else t
meta = {k: v for k, v in t.items() if k != "traceEvents"} if isinstance(t, dict) else {}
print(json.dumps(meta, sort_keys=True))
for e in events:
    e = {k: v for k, v in e.items() if k not in ("ts", "dur")}
    if isinstance(e.get("args"), dict):
        e["args"] = {k: v for k, v in e["args"].items() if not k.endswith(("_ms", "_us", "_s"))}
    print(json.dumps(e, sort_keys=True))
EOF
}

run_scenario() {  # BIN TAG INDEX
  local bin="$1" tag="$2" idx="$3" name cmds d rc
  IFS='|' read -r name cmds <<< "${scenarios[$idx]}"
  d="$dir/$name.$tag"
  rm -rf "$d"; mkdir -p "$d"
  cp "$dir/train.h5" "$dir/val.h5" "$d/"
  echo "not an HDF5 file" > "$d/notdata.txt"
  (
    cd "$d"
    IFS=';' read -r -a parts <<< "$cmds"
    for c in "${parts[@]}"; do
      rc=0
      # shellcheck disable=SC2086
      timeout 300 "${mpiexec[@]}" -np 2 "$bin" $c >> out 2>> err || rc=$?
      echo "exit $rc" >> out
    done
  )
  {
    mask_stdout "$d/out"
    sed -E 's/^\[rank [0-9]+\] //; s/[0-9]+(\.[0-9]+)? s\b/T s/g' "$d/err" | grep -v '^ *$' | grep -iv 'mpirun\|prterun\|----\|process\|job\b' | sort || true
    [ -s "$d/m.jsonl" ] && strip_metrics "$d/m.jsonl"
    [ -s "$d/t.json" ] && strip_trace "$d/t.json"
    (cd "$d" && find . -type f ! -name out ! -name err | sort)
    for f in "$d"/*/*.h5; do
      [ -e "$f" ] || continue
      echo "checkpoint ${f#"$d"/}"
      "$bin" inspect "$f" 2>&1 | awk '$NF == "ok" { print }'
    done
  } > "$d/summary"
}

"$old_bin" make-dataset --samples 200 --in-dim 8 --classes 3 --seed 5 "$dir/train.h5" > /dev/null
"$old_bin" make-dataset --samples 60 --in-dim 8 --classes 3 --seed 6 --teacher-seed 5 "$dir/val.h5" > /dev/null
differ=0
for ((i = 0; i < ${#scenarios[@]}; i++)); do
  run_scenario "$old_bin" old "$i" &
  run_scenario "$new_bin" new "$i"
  wait
  name="${scenarios[$i]%%|*}"
  if cmp -s "$dir/$name.old/summary" "$dir/$name.new/summary"; then
    printf 'same  %-30s (%s lines)\n' "$name" "$(wc -l < "$dir/$name.new/summary")"
  else
    printf 'DIFF  %s\n' "$name"
    diff "$dir/$name.old/summary" "$dir/$name.new/summary" | head -20 | cut -c1-400 | sed 's/^/      /' || true
    differ=$((differ + 1))
  fi
done
if [ "$differ" = 0 ]; then echo "# compare_train_runs: all ${#scenarios[@]} scenarios identical"; exit 0; fi
echo "# compare_train_runs: $differ of ${#scenarios[@]} scenarios differ"
exit 1
