#!/bin/bash
# slurm_e2e.sh MICRODDP_BIN — the real job scripts of jobs/ on a real (local, 2-node) Slurm cluster.
#
# Starts the cluster (local_cluster.sh), submits with small settings:
#   1. train_multi_node.sbatch on 2 nodes x 1 rank, checkpoints every 3 steps; then again with more
#      steps: the second run must resume from the first one's checkpoint (automatic resume)
#   2. train_single_node.sbatch, 2 ranks on one node
#   3. bench_collectives.sbatch across 2 nodes -> bench JSON + fitted model.json
#   4. jobs/sweep.sh slurm over 1 and 2 nodes (strong + weak) + the aggregation job
# waits for each, checks the outputs (training finished, results JSON, CSV + PNG), and always tears
# the cluster down (trap), also on failure or timeout. Job logs are printed when something fails.
set -euo pipefail
bin=$(readlink -f "$1")
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$repo/tests/slurm
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
for b in slurmctld slurmd munged sbatch; do command -v "$b" >/dev/null || { echo "SKIP: $b not installed"; exit 77; }; done
work=$(mktemp -d /tmp/mddp-slurm-e2e.XXXXXX)
chmod 0755 "$work"  # munged runs as user munge and must reach its directory below
cluster=$work/cluster
cleanup() {
  local rc=$?
  "$here/local_cluster.sh" down "$cluster" || true
  if [ "$rc" != 0 ]; then
    echo "---- FAILED (rc $rc); job logs:"; tail -n 30 "$work"/*.out 2>/dev/null || true
    echo "---- slurmctld log:"; tail -n 20 "$cluster/log/slurmctld.log" 2>/dev/null || true
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
t0=$SECONDS
conf=$("$here/local_cluster.sh" up "$cluster" 2)
eval "$conf"
echo "cluster up in $((SECONDS - t0)) s"

export MICRODDP_BIN=$bin MDDP_JOBS_DIR=$repo/jobs
small=(STEPS=6 WIDTH=128 DEPTH=3 GLOBAL_BATCH=64)
submit() {  # submit NAME [VAR=VALUE...] -- SBATCH ARGS... SCRIPT  -> job id
  local name=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" sbatch --parsable --chdir="$work" --output="$work/$name-%j.out" --job-name="mddp-$name" "$@"
}
wait_ok() { "$here/local_cluster.sh" wait "$cluster" "$1" "${2:-120}"; }
fail() { echo "FAIL: $*"; exit 1; }

# All independent jobs at once (4 CPUs over 2 nodes; each job asks for 1 CPU per rank).
multi=$(submit multi "${small[@]}" CKPT_EVERY=3 RESULTS_DIR="$work/multi" -- --nodes=2 --ntasks-per-node=1 "$repo/jobs/train_multi_node.sbatch")
single=$(submit single "${small[@]}" RESULTS_DIR="$work/single" -- --nodes=1 --ntasks-per-node=2 "$repo/jobs/train_single_node.sbatch")
bench=$(submit bench MIN_BYTES=4 MAX_BYTES=262144 ITERS=5 BACKENDS=mpi,ring RESULTS_DIR="$work/bench" -- "$repo/jobs/bench_collectives.sbatch")
wait_ok "$multi"; wait_ok "$single"; wait_ok "$bench"

grep -q "^# summary: 6 steps" "$work"/multi-"$multi".out || fail "multi-node training did not finish"
grep -q '"type":"summary"' "$work"/multi/train_"$multi"_r0.jsonl || fail "multi-node results JSON missing"
grep -q "2 (1 on this node)" "$work"/multi-"$multi".out || fail "multi-node run was not spread over 2 nodes"
ls "$work"/multi/checkpoints/*.h5 >/dev/null || fail "no checkpoint written"
grep -q "^# summary: 6 steps" "$work"/single-"$single".out || fail "single-node training did not finish"
grep -q '"type":"summary"' "$work"/single/train_"$single".jsonl || fail "single-node results JSON missing"
grep -q '"entries"' "$work"/bench/model.json || fail "no fitted model from the collectives benchmark"

# Automatic resume: same checkpoint directory, 9 steps -> continues at step 6.
resume=$(submit resume STEPS=9 WIDTH=128 DEPTH=3 GLOBAL_BATCH=64 CKPT_EVERY=3 RESULTS_DIR="$work/multi" -- --nodes=2 --ntasks-per-node=1 "$repo/jobs/train_multi_node.sbatch")
# The scaling sweep (1 and 2 nodes, strong and weak) + aggregation, with the benchmark's model.
cp "$work/bench/model.json" "$work/model.json"
(cd "$work" && env "${small[@]}" STEPS=4 NODE_COUNTS="1 2" RESULTS_DIR="$work/scaling" MODEL_JSON="$work/model.json" \
   SBATCH_ARGS="--chdir=$work --output=$work/scaling-%j.out" "$repo/jobs/sweep.sh" slurm)
read -r -a ids <"$work/scaling/jobids"
wait_ok "$resume"
for id in "${ids[@]}"; do wait_ok "$id" 180; done
grep -Eq "resum|step 6" "$work"/resume-"$resume".out || fail "the second run did not resume from the checkpoint"
grep -q "^# summary: 9 steps" "$work"/resume-"$resume".out || fail "resumed training did not finish"
for f in scaling.csv phases.csv scaling_efficiency.png step_phases.png; do
  [ -s "$work/scaling/$f" ] || fail "aggregation did not produce $f"
done
head -c 8 "$work/scaling/scaling_efficiency.png" | od -c | grep -q "P   N   G" || fail "scaling_efficiency.png is not a PNG"
[ "$(grep -c '^strong,\|^weak,' "$work/scaling/scaling.csv")" = 8 ] || fail "scaling.csv should have 8 rows (2 modes x 2 strategies x 2 node counts)"
grep -q "efficiency_predicted" "$work/scaling/scaling.csv" || fail "no predicted column"
echo "slurm end-to-end: OK in $((SECONDS - t0)) s"
