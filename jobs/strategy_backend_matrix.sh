#!/bin/bash
# jobs/strategy_backend_matrix.sh — every gradient-sync strategy over every backend on one model,
# side by side: the measurement behind `train`'s default --strategy and --comm
# (docs/performance.md, "Defaults chosen by measurement").
#
# One `bench ddp` per backend and round (it compares the strategies within one run, interleaved);
# the backends are interleaved across rounds and their order rotates every round, so drift on a
# shared machine hits every cell alike. Prints the median step time of every cell over the rounds
# and its ratio to the median of naive over mpi (the old default); the per-run JSON stays in
# $RESULTS_DIR.
#
# Settings (environment, with defaults):
#   NP [2]  WIDTH [128]  DEPTH [16]  GLOBAL_BATCH [256]  (the course model: `train`'s defaults)
#   BACKENDS ["mpi ring rd auto"]  STRATEGIES [naive,flat,overlap,bucketed]  BUCKET_MB [25]
#   ROUNDS [5]  STEPS [10] timed steps per variant per round  WARMUP [2] untimed steps before them
# and jobs/lib/common.sh's (MICRODDP_BIN, RESULTS_DIR, LAUNCHER, MPIRUN_FLAGS, ...).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
NP=${NP:-2} WIDTH=${WIDTH:-128} DEPTH=${DEPTH:-16} GLOBAL_BATCH=${GLOBAL_BATCH:-256}
BACKENDS=${BACKENDS:-mpi ring rd auto} STRATEGIES=${STRATEGIES:-naive,flat,overlap,bucketed} BUCKET_MB=${BUCKET_MB:-25}
ROUNDS=${ROUNDS:-5} STEPS=${STEPS:-10} WARMUP=${WARMUP:-2}
mddp_init
mddp_provenance "$@"
echo "# model    : width $WIDTH depth $DEPTH global batch $GLOBAL_BATCH, np $NP; $ROUNDS rounds x $STEPS steps"

read -r -a backends <<<"$BACKENDS"
for ((round = 1; round <= ROUNDS; ++round)); do
  n=${#backends[@]}
  for ((k = 0; k < n; ++k)); do
    b=${backends[$(((k + round - 1) % n))]}  # rotated: each backend takes every slot of a round
    mddp_launch "$NP" "$MICRODDP_BIN" bench ddp --comm "$b" --width "$WIDTH" --depth "$DEPTH" \
      --global-batch "$GLOBAL_BATCH" --strategies "$STRATEGIES" --bucket-mb "$BUCKET_MB" --rounds 1 \
      --steps "$STEPS" --warmup "$WARMUP" --json "$RESULTS_DIR/round${round}_$b.json" >"$RESULTS_DIR/round${round}_$b.log"
  done
done

python3 - "$RESULTS_DIR" "$BACKENDS" <<'EOF'
import glob, json, statistics, sys
results, backends = sys.argv[1], sys.argv[2].split()
cells = {}  # (variant, backend) -> step_ms of every round
for path in sorted(glob.glob(f"{results}/round*_*.json")):
    run = json.load(open(path))
    for row in run["rows"]:
        if row["wrong"] != 0:
            sys.exit(f"{path}: {row['variant']} left ranks with different parameters")
        cells.setdefault((row["variant"], run["comm"]), []).append(row["step_ms"])
variants = list(dict.fromkeys(v for v, _ in cells))
ref = statistics.median(cells.get(("naive", "mpi"), [float("nan")]))
print("# median step_ms over rounds (ratio to naive over mpi)")
print(f"# {'variant':<18}" + "".join(f"{b:>18}" for b in backends))
for v in variants:
    line = f"  {v:<18}"
    for b in backends:
        xs = cells.get((v, b))
        line += f"{statistics.median(xs):9.2f} ({statistics.median(xs) / ref:4.2f}x)" if xs else f"{'-':>18}"
    print(line)
EOF
