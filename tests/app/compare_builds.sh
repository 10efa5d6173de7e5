#!/bin/bash
# compare_builds.sh — are two `microddp` binaries the same program? Runs one fixed set of short
# training runs with each binary and compares, run by run, everything a run leaves behind that does
# not measure time:
#   stdout   the step lines' step and loss columns, the final parameter checksum (FNV-1a over the
#            parameter bytes), the header's lines that describe the run (strategy, buckets, bytes);
#   metrics  the --metrics JSONL, every record with its timing fields removed (*_ms, *_s, *_ns,
#            timestamp, overlap, samples_per_s: they measure time, so they differ run to run);
#   ckpts    every checkpoint the run wrote, as `microddp inspect` lists its datasets (path, shape,
#            checksum of the bytes): parameters, optimizer state, compression state, data order.
# A refactoring that claims "no change of behaviour" must leave all of it identical; one differing
# bit in a gradient, a bucket boundary or a checkpoint dataset shows. The set (55 runs without the
# emulated GPU; 14 minutes with -j 2 on 2 cores that other builds kept at a load of ~16, most of it
# process start-up; --only picks a subset):
#   the default run (default model, strategy and backend at np 2, 6 steps);
#   every strategy x backend at np 3 (uneven batch split);
#   --shard optimizer|gradients with every strategy at np 3, and with accumulation;
#   every compression mode with every strategy at np 3, PowerSGD with a start step and without error
#   feedback, and a resume from a PowerSGD checkpoint (its Q and error feedback travel through it);
#   `bench ddp` over every strategy, two bucket caps, each shard mode and three compression modes
#   (its --json table without the times: collectives and bytes per step, #wrong, memory);
#   the emulated-GPU graphed step (--device cuda --comm nccl --cuda-graph on, each strategy), when
#   both cuda-emu binaries are given (OLD_EMU_BIN and NEW_EMU_BIN; skipped otherwise, and said so).
#
# Usage: tests/app/compare_builds.sh [-j N] [--keep DIR] [--only REGEX] OLD_BIN NEW_BIN
#   e.g. (reference build of main, then the branch):
#     git worktree add /tmp/ref main && (cd /tmp/ref && BUILD_DIR=build ./setup.sh build)
#     tests/app/compare_builds.sh /tmp/ref/build/src/app/microddp build/src/app/microddp
#   OLD_EMU_BIN=/tmp/ref/build-cuda-emu/src/app/microddp NEW_EMU_BIN=build-cuda-emu/src/app/microddp \
#     tests/app/compare_builds.sh ...   (adds the emulated-GPU runs)
# Exit 0: every run identical; 1: some differ (each named, with a diff of what differs); 2: usage.
# -j N: runs in parallel (default 2). --keep DIR: keep every run's files there. --only REGEX: only
# the runs whose line ("KIND np=N FLAGS", as printed) matches (grep -E), e.g. --only 'shard|resume'. MPIEXEC (environment)
# replaces the launcher (default: mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1).
set -euo pipefail

jobs=2
keep=""
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    -j) jobs="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "compare_builds.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || { echo "usage: compare_builds.sh [-j N] [--keep DIR] [--only REGEX] OLD_BIN NEW_BIN" >&2; exit 2; }
old_bin=$(realpath "$1")
new_bin=$(realpath "$2")
for b in "$old_bin" "$new_bin"; do
  [ -x "$b" ] || { echo "compare_builds.sh: $b is not an executable" >&2; exit 2; }
done
emu=0
if [ -n "${OLD_EMU_BIN:-}" ] && [ -n "${NEW_EMU_BIN:-}" ]; then
  for b in "$OLD_EMU_BIN" "$NEW_EMU_BIN"; do
    [ -x "$b" ] || { echo "compare_builds.sh: $b is not an executable" >&2; exit 2; }
  done
  OLD_EMU_BIN=$(realpath "$OLD_EMU_BIN")
  NEW_EMU_BIN=$(realpath "$NEW_EMU_BIN")
  emu=1
fi
if [ -n "${MPIEXEC:-}" ]; then
  read -r -a mpiexec <<< "$MPIEXEC"
else
  mpiexec=(mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
fi
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1

strategies=(naive flat overlap bucketed)
# The CPU backends of the old binary (both must have the same: a backend missing in one is a
# difference), without the course's lab backends (they run students' code: "not done yet").
mapfile -t backends < <("$old_bin" train --help 2>&1 | sed -nE 's/.*this build: ([^)]*)\).*/\1/p' | tr ',' '\n' |
  tr -d ' ' | grep -v -E '^(nccl.*|lab-.*|)$')
[ ${#backends[@]} -gt 0 ] || { echo "compare_builds.sh: no backends in '$old_bin train --help'" >&2; exit 2; }

# One run: "KIND|NP|FLAGS". KIND: train (CPU), emu (emulated GPU), resume (train twice: FLAGS
# with --steps 4, then with --steps 6 --resume auto), bench (bench ddp).
runs=()
add() { runs+=("$1|$2|$3"); }
tiny="--width 16 --depth 3 --global-batch 25 --log-every 1 --threads 1 --bucket-mb 0.001"
add train 2 "--steps 6 --threads 1"
for s in "${strategies[@]}"; do
  for b in "${backends[@]}"; do add train 3 "$tiny --steps 4 --strategy $s --comm $b"; done
done
for s in "${strategies[@]}"; do
  for m in optimizer gradients; do add train 3 "$tiny --steps 4 --strategy $s --comm ring --shard $m"; done
done
add train 3 "$tiny --steps 4 --strategy bucketed --comm mpi --shard gradients --accum-steps 2"
add train 3 "$tiny --steps 4 --strategy bucketed --comm mpi --shard optimizer --first-bucket-mb 0.0002"
for s in "${strategies[@]}"; do
  for c in fp16 bf16 powersgd; do add train 3 "$tiny --steps 4 --strategy $s --comm mpi --grad-compression $c"; done
done
add train 3 "$tiny --steps 5 --strategy bucketed --comm ring --grad-compression powersgd --powersgd-rank 2 --powersgd-start-step 2"
add train 3 "$tiny --steps 4 --strategy overlap --comm rd --grad-compression bf16 --error-feedback off"
add train 3 "$tiny --steps 4 --strategy bucketed --comm mpi --grad-compression powersgd --accum-steps 2 --clip-grad-norm 0.02"
add resume 3 "$tiny --strategy bucketed --comm mpi --grad-compression powersgd --powersgd-rank 1"
add resume 3 "$tiny --strategy flat --comm ring --grad-compression fp16"
add resume 3 "$tiny --strategy bucketed --comm mpi --shard gradients"
bench="ddp --width 32 --depth 3 --global-batch 24 --steps 2 --warmup 1 --rounds 1 --threads 1 --bucket-mb 0.001,1"
add bench 3 "$bench --shard none,optimizer,gradients"
add bench 2 "$bench --grad-compression none,fp16,powersgd --comm ring"
if [ "$emu" = 1 ]; then
  for s in "${strategies[@]}"; do
    add emu 2 "--width 16 --depth 3 --global-batch 24 --steps 5 --log-every 1 --bucket-mb 0.001 --strategy $s --comm nccl --cuda-graph on"
  done
  add emu 2 "--width 16 --depth 3 --global-batch 24 --steps 5 --log-every 1 --strategy bucketed --comm nccl --cuda-graph on --shard optimizer"
fi

if [ -n "$only" ]; then
  kept=()
  for r in "${runs[@]}"; do
    IFS='|' read -r kind np flags <<< "$r"
    if grep -qE -- "$only" <<< "$kind np=$np $flags"; then kept+=("$r"); fi
  done
  runs=("${kept[@]}")
  [ ${#runs[@]} -gt 0 ] || { echo "compare_builds.sh: no run matches --only '$only'" >&2; exit 2; }
fi

if [ -n "$keep" ]; then
  mkdir -p "$keep"
  dir=$(realpath "$keep")
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi

# The part of a metrics file (JSONL) or a JSON file that does not measure time (one line per record,
# keys sorted).
strip_metrics() {
  python3 - "$1" << 'EOF'
import json, re, sys
# Keys that measure time or name the run: *_ms, *_s, *_ms_per_step, ..., and the run's random id.
timing = re.compile(r'(^|_)(ms|s|ns|us)(_|$)|timestamp|overlap|run_id|wall|elapsed|date|host|pid|speedup|overhead|per_step')
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if not timing.search(k)}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
text = open(sys.argv[1]).read()
try:
    records = [json.loads(text)]
except json.JSONDecodeError:
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
for r in records:
    print(json.dumps(strip(r), sort_keys=True))
EOF
}

# The part of stdout that does not measure time: step lines' step and loss, the checksum, and the
# header's lines that describe the run (model, data, strategy and its collectives, memory,
# compression, checks).
strip_stdout() {
  awk '/^ +[0-9]+ +[-0-9.naif]+ / { print "step", $1, $2; next }
       /parameter checksum/ { sub(/.*parameter checksum /, ""); print "checksum", $1; next }
       /^#   (model|data|optimizer|strategy|memory|compression|precision|checks|cuda graph) / { print }' "$1"
}

# run_one BIN TAG INDEX: the run's outputs, stripped, in $dir/INDEX.TAG/
run_one() {
  local bin="$1" tag="$2" idx="$3"
  local kind np flags d rc=0
  IFS='|' read -r kind np flags <<< "${runs[$idx]}"
  d="$dir/$idx.$tag"
  rm -rf "$d"; mkdir -p "$d/ckpt"
  # shellcheck disable=SC2086  # flags are words
  case "$kind" in
    train)
      MICRODDP_DEVICE=cpu timeout 300 "${mpiexec[@]}" -np "$np" "$bin" train $flags --metrics "$d/metrics.jsonl" \
        --checkpoint-dir "$d/ckpt" --checkpoint-every 2 > "$d/out" 2> "$d/err" || rc=$? ;;
    emu)
      timeout 300 "${mpiexec[@]}" -np "$np" "$bin" train $flags --device cuda --metrics "$d/metrics.jsonl" \
        --checkpoint-dir "$d/ckpt" --checkpoint-every 2 > "$d/out" 2> "$d/err" || rc=$? ;;
    resume)
      { MICRODDP_DEVICE=cpu timeout 300 "${mpiexec[@]}" -np "$np" "$bin" train $flags --steps 4 \
          --checkpoint-dir "$d/ckpt" --checkpoint-every 2 &&
        MICRODDP_DEVICE=cpu timeout 300 "${mpiexec[@]}" -np "$np" "$bin" train $flags --steps 6 --resume auto \
          --metrics "$d/metrics.jsonl" --checkpoint-dir "$d/ckpt" --checkpoint-every 2; } > "$d/out" 2> "$d/err" ||
        rc=$? ;;
    bench)
      MICRODDP_DEVICE=cpu timeout 300 "${mpiexec[@]}" -np "$np" "$bin" bench $flags --json "$d/metrics.jsonl" \
        > "$d/out" 2> "$d/err" || rc=$? ;;
  esac
  {
    echo "exit $rc"
    if [ "$kind" = bench ]; then grep -E '^# (OK|FAILED)' "$d/out" || true; else strip_stdout "$d/out"; fi
    [ -s "$d/metrics.jsonl" ] && strip_metrics "$d/metrics.jsonl"
    for f in "$d"/ckpt/*.h5; do
      [ -e "$f" ] || continue
      echo "checkpoint $(basename "$f")"
      # Datasets only (path, shape, checksum): the file's attributes name the build and the date.
      "$bin" inspect "$f" 2>&1 | awk '$NF == "ok" { print }'
    done
  } > "$d/summary"
  [ "$rc" = 0 ] || echo "FAILED" >> "$d/summary"
}

tasks=()
for ((i = 0; i < ${#runs[@]}; i++)); do
  IFS='|' read -r kind _ _ <<< "${runs[$i]}"
  if [ "$kind" = emu ]; then
    tasks+=("$OLD_EMU_BIN|old|$i" "$NEW_EMU_BIN|new|$i")
  else
    tasks+=("$old_bin|old|$i" "$new_bin|new|$i")
  fi
done
for t in "${tasks[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  IFS='|' read -r b tag i <<< "$t"
  run_one "$b" "$tag" "$i" &
done
wait

differ=0
failed=0
for ((i = 0; i < ${#runs[@]}; i++)); do
  IFS='|' read -r kind np flags <<< "${runs[$i]}"
  label="$kind np=$np $flags"
  if grep -q '^FAILED' "$dir/$i.new/summary"; then
    failed=$((failed + 1))
    printf 'FAILED %s\n' "$label"
    grep -m2 -i 'error' "$dir/$i.new/err" | sed 's/^/      /' || true
  elif cmp -s "$dir/$i.old/summary" "$dir/$i.new/summary"; then
    lines=$(wc -l < "$dir/$i.new/summary")
    ck=$(grep -c '^checkpoint' "$dir/$i.new/summary" || true)
    printf 'same  %s  (%s lines, %s checkpoints)\n' "$label" "$lines" "$ck"
  else
    printf 'DIFF  %s\n' "$label"
    diff "$dir/$i.old/summary" "$dir/$i.new/summary" | head -20 | sed 's/^/      /'
    differ=$((differ + 1))
  fi
done
[ "$emu" = 1 ] || echo "# emulated-GPU runs skipped: set OLD_EMU_BIN and NEW_EMU_BIN (cuda-emu builds) to add them"
if [ "$differ" = 0 ] && [ "$failed" = 0 ]; then
  echo "# compare_builds: all ${#runs[@]} runs identical"
  exit 0
fi
echo "# compare_builds: $differ of ${#runs[@]} runs differ, $failed failed (marked DIFF / FAILED above)"
exit 1
