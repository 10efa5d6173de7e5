#!/bin/bash
# make_figures.sh — regenerate every figure of the course (docs/img/*.png) from real runs of this
# build, docs/img/figures.md (each figure with the commands that produced its data and the
# conditions: date, processor, load average) and docs/img/data/ (the numbers each figure was
# drawn from, one file per figure; tests/docs/check_figure_claims.py holds the captions against
# them, so run it after a regeneration: a claim that no longer holds must be reworded). One command:
#
#   docs/tools/make_figures.sh                     # ~10 min on 2 quiet cores; writes docs/img
#   docs/tools/make_figures.sh --quick --out DIR   # tiny sizes, ~1-2 min (the app.figures_quick test)
#
# Options: --build DIR (default: build; needs DIR/microddp), --out DIR (default: docs/img),
# --quick (small models and sweeps: checks the pipeline, not the numbers), --keep (keep the raw
# run outputs in OUT/raw; figures.py can redraw from them). Needs Debian's python3-matplotlib
# (setup.sh installs it) and mpirun. The runs use the README's launcher settings (--bind-to none,
# mpi_yield_when_idle 1). Quiet machine first: every run records the load average it started at,
# and the captions print it.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$repo/build out=$repo/docs/img quick=0 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "make_figures.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build/microddp
[ -x "$bin" ] || { echo "make_figures.sh: no $bin: build first (./setup.sh build)" >&2; exit 2; }
if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=python3; fi
"$python" -c "import matplotlib" 2>/dev/null ||
  { echo "make_figures.sh: $python has no matplotlib (Debian: apt-get install python3-matplotlib)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "make_figures.sh: no mpirun on PATH" >&2; exit 2; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
export MICRODDP_DEVICE=cpu

# run NAME CMD...: run one command (output in $work/NAME.out), append its record to the manifest.
manifest=$work/manifest.jsonl
run() {
  local name=$1; shift
  local load t0 t1
  load=$(cut -d' ' -f1 /proc/loadavg); t0=$(date +%s.%N)
  if ! "$@" >"$work/$name.out" 2>&1; then
    echo "make_figures.sh: run '$name' failed: $*" >&2; tail -20 "$work/$name.out" >&2; exit 1
  fi
  t1=$(date +%s.%N)
  # The command as a reader would type it: the binary as build/microddp, the work dir as ./
  local shown="$*"; shown=${shown//$bin/build\/microddp}; shown=${shown//$work\//}; shown=${shown//$repo\//}
  "$python" -c 'import json,sys; print(json.dumps({"name":sys.argv[1],"command":sys.argv[2],"load":float(sys.argv[3]),"seconds":round(float(sys.argv[4]),1)}))' \
    "$name" "$shown" "$load" "$(echo "$t1 - $t0" | bc)" >>"$manifest"
  echo "  ran $name ($(echo "$t1 - $t0" | bc | cut -c1-5) s, load $load)"
}

if [ "$quick" = 1 ]; then
  W=128 D=4 STEPS=3 MAXB=64K ITERS=3 LOSS_STEPS=10 ZW=128 ZD=4 NPS="1 2"
  BW=32 BD=8 BB=32 BUCKETS=0.0078125,0.0625 BREF=0.0625 BROUNDS=1
else
  W=1024 D=8 STEPS=6 MAXB=16M ITERS=10 LOSS_STEPS=500 ZW=1024 ZD=16 NPS="1 2 4"
  # 64 x 64 weights (16 KiB) in 512 layers: 8.1 MiB of gradients in 1024 parameters; the caps give
  # 1024, 171, 35, 9 and 1 bucket(s).
  BW=64 BD=512 BB=64 BUCKETS=0.015625,0.0625,0.25,1,8.5 BREF=0.25 BROUNDS=4
fi
echo "make_figures.sh: $bin -> $out ($([ "$quick" = 1 ] && echo quick || echo full))"

# 1. The ring's schedule, from the code the ring runs.
run ring_schedule "$bin" ring-schedule --ranks 4 --count 16 --json "$work/ring.json"

# 2-3. busbw per backend at 4 ranks, and the α-β fit (with its size regimes) over the same points.
for n in 4; do
  run "bench_collectives_np$n" "${mpi[@]}" -np $n "$bin" bench collectives --backends mpi,ring,rd,naive --ops allreduce \
    --min-bytes 1K --max-bytes "$MAXB" --factor 4 --warmup 2 --iters $ITERS --json "$work/collectives_np$n.json"
done
run alpha_beta_fit "$bin" analyze --fit --bench "$work/collectives_np4.json" --fit-out "$work/model_np4.json"

# 4. Bucket sweep: measured (bench ddp, interleaved rounds) against the prediction (analyze, whose
#    communication model is fitted in-process at the same rank count), on a narrow, deep model: many
#    small parameters, so that every cap gives another plan.
run bucket_measured "${mpi[@]}" -np 2 "$bin" bench ddp --width $BW --depth $BD --global-batch $BB --strategies bucketed \
  --bucket-mb $BUCKETS --rounds $BROUNDS --steps $STEPS --threads 1 --json "$work/bucket_measured.json"
run bucket_predicted "${mpi[@]}" -np 2 "$bin" analyze --width $BW --depth $BD --global-batch $BB --strategies bucketed \
  --bucket-mb $BREF --steps $STEPS --threads 1 --json "$work/bucket_predicted.json"

# 5. Timelines of naive, flat, overlap and bucketed: one configuration, one setting; the figure shows
#    the median step (trace_to_png.py --step median).
for s in naive flat overlap bucketed; do
  run "timeline_$s" "${mpi[@]}" -np 2 "$bin" train --width $W --depth $D --steps 6 --threads 1 --strategy $s \
    --bucket-mb 4 --first-bucket-mb 1 --trace "$work/trace_$s.json"
done

# 6. Scaling curve, measured (jobs/sweep.sh local) against the model's prediction.
mkdir -p "$work/scaling"
run scaling_model "${mpi[@]}" -np 2 "$bin" analyze --fit --width $W --depth $D --threads 1 --fit-out "$work/scaling/model.json"
run scaling_sweep env RESULTS_DIR="$work/scaling" RANK_COUNTS="$NPS" MODES="strong weak" STRATEGIES=bucketed \
  STEPS=$((STEPS * 2)) WIDTH=$W DEPTH=$D MICRODDP_BIN="$bin" MODEL_JSON="$work/scaling/model.json" \
  bash "$repo/jobs/sweep.sh" local

# 7. Compression: loss per step for each mode (the runs of docs/compression.md's loss table: the
#    default model), and bytes on the wire against step time.
for m in none bf16 fp16 powersgd_r4 powersgd_r4_noef powersgd_r1 powersgd_r1_noef; do
  case $m in
    powersgd_r*) extra=(--grad-compression powersgd --powersgd-rank "${m:10:1}") ;;
    *) extra=(--grad-compression "$m") ;;
  esac
  [ "${m%_noef}" != "$m" ] && extra+=(--error-feedback off)
  run "loss_$m" "${mpi[@]}" -np 2 "$bin" train --steps $LOSS_STEPS --threads 1 \
    --log-every 1000000 "${extra[@]}" --metrics "$work/loss_$m.jsonl"
done
run compression_bench "${mpi[@]}" -np 2 "$bin" bench ddp --width $W --depth $D --strategies bucketed \
  --bucket-mb 4 --grad-compression none,fp16,bf16,powersgd --rounds $BROUNDS --steps $STEPS --threads 1 --json "$work/compression.json"

# 8. ZeRO: memory per rank, measured from the allocations, per stage and rank count.
for n in $NPS; do
  for s in none optimizer gradients; do
    run "zero_n${n}_$s" "${mpi[@]}" -np "$n" "$bin" train --width $ZW --depth $ZD --steps 2 --global-batch 64 \
      --strategy bucketed --bucket-mb 4 --shard $s --threads 1 --metrics "$work/zero_n${n}_$s.jsonl"
  done
done

conditions=$("$python" - "$repo" <<'EOF'
import json, platform, sys, datetime
cpu = "unknown processor"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip(); break
import os
print(json.dumps({"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                  "cpu": cpu, "cores": os.cpu_count()}))
EOF
)
# Raw outputs kept before drawing: a drawing bug can be fixed and figures.py rerun on them.
if [ "$keep" = 1 ]; then rm -rf "$out/raw"; cp -r "$work" "$out/raw"; fi
"$python" "$repo/docs/tools/figures.py" --work "$work" --out "$out" --conditions "$conditions" \
  $([ "$quick" = 1 ] && echo --quick)
echo "make_figures.sh: wrote $(ls "$out"/*.png | wc -l) figures and $out/figures.md"
