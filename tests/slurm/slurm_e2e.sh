#!/bin/bash
# slurm_e2e.sh MICRODDP_BIN CLUSTER_PROBE — the real job scripts of jobs/ on a real (local, 2-node)
# Slurm cluster whose nodes are emulated hosts (tests/cluster/cluster.sh), linked at 1 Gbit/s.
#
# Starts the cluster (local_cluster.sh), then:
#   0. srun of cluster_probe, 2 nodes x 2 tasks: the tasks of one node share a node-local
#      communicator and shared memory; between the nodes the bytes cross the emulated link
#   1. train_multi_node.sbatch on 2 nodes x 1 rank, checkpoints every 3 steps; then again with more
#      steps: the second run must resume from the first one's checkpoint (automatic resume)
#   2. train_single_node.sbatch, 2 ranks on one node; and with 1 rank of --cpus-per-task=2 bound to
#      its CPUs (srun --cpu-bind=cores): train must report 2 threads from SLURM_CPUS_PER_TASK with no
#      oversubscription warning (the task got both CPUs: srun passed --cpus-per-task), and the
#      site file MICRODDP_SITE_ENV was sourced
#   3. bench_collectives.sbatch across 2 nodes -> bench JSON + fitted model.json; and docs/hpc.md's
#      first job, the block under its "submits this block as written" marker, as written (its
#      sizes overridden on the sbatch command line for this 2-CPU cluster)
#   4. jobs/sweep.sh slurm over 1 and 2 nodes (strong + weak) + the aggregation job
# waits for each, checks the outputs (training finished, results JSON, CSV + PNG), and always tears
# the cluster down (daemons, then the emulated hosts), also on failure or timeout. Job logs are
# printed when something fails. Skips (77) without root, Slurm, munge, or network namespaces.
set -euo pipefail
bin=$(readlink -f "$1")
probe=$(readlink -f "$2")
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$repo/tests/slurm
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
for b in slurmctld slurmd munged sbatch; do command -v "$b" >/dev/null || { echo "SKIP: $b not installed"; exit 77; }; done
# shellcheck source=../cluster/cluster_lib.sh
source "$repo/tests/cluster/cluster_lib.sh"
cluster_test_begin slurm   # skips without namespaces; tears the hosts down on every exit path
work=$WORK
chmod 0755 "$work"  # munged runs as user munge and must reach its directory below
cluster=$work/cluster
report() {
  "$here/local_cluster.sh" down "$cluster" || true
  if [ "$CLUSTER_EXIT_RC" != 0 ]; then
    echo "---- FAILED (rc $CLUSTER_EXIT_RC); job logs:"; tail -n 30 "$work"/*.out 2>/dev/null || true
    echo "---- slurmctld log:"; tail -n 20 "$cluster/log/slurmctld.log" 2>/dev/null || true
  fi
}
cluster_on_exit report
t0=$SECONDS
conf=$("$here/local_cluster.sh" up "$cluster" 2)
eval "$conf"
"$CLUSTER" shape 1gbit
echo "cluster up in $((SECONDS - t0)) s"
client() { "$here/local_cluster.sh" client "$cluster" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

export MICRODDP_BIN=$bin MDDP_JOBS_DIR=$repo/jobs
small=(STEPS=6 WIDTH=128 DEPTH=3 GLOBAL_BATCH=64)
submit() {  # submit NAME [VAR=VALUE...] -- SBATCH ARGS... SCRIPT  -> job id
  local name=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" "$here/local_cluster.sh" client "$cluster" sbatch --parsable --chdir="$work" --output="$work/$name-%j.out" --job-name="mddp-$name" "$@"
}
wait_ok() { "$here/local_cluster.sh" wait "$cluster" "$1" "${2:-120}"; }

# 0. srun across the emulated hosts: node grouping, shared memory inside a node, the link between.
field() { awk -v k="$2" '{ for (i = 1; i < NF; ++i) if ($i == k) { print $(i + 1); exit } }' <<<"$1"; }
out=$(client srun --nodes=2 --ntasks=4 --ntasks-per-node=2 "$probe" --mib 8 --pingpongs 100) || fail "srun of cluster_probe failed: $out"
grep -qx "grouping ok" <<<"$out" || fail "srun: node-local communicators do not match the nodes: $out"
[ "$(grep -c "node_size 2\$" <<<"$out")" = 4 ] || fail "srun: expected 2 tasks per node: $out"
intra=$(grep "^transfer same_host=1 " <<<"$out"); inter=$(grep "^transfer same_host=0 " <<<"$out")
[ $(( $(field "$intra" link_bytes) + $(field "$intra" lo_bytes) )) -lt $(( $(field "$intra" bytes) / 100 )) ] || fail "srun: not shared memory inside a node: $intra"
[ "$(field "$inter" link_bytes)" -ge "$(field "$inter" bytes)" ] || fail "srun: the bytes between nodes did not cross the emulated link: $inter"
echo "ok   srun 2 nodes x 2 tasks: grouping ok, shared memory inside a node, $(field "$inter" gbit_per_s) Gbit/s over the 1 Gbit/s link"

# All independent jobs at once (4 CPUs over 2 nodes; each job asks for 1 CPU per rank).
# (The multi-node job shards the optimizer state and the single-node job compresses its gradients:
# the scripts' SHARD and GRAD_COMPRESSION settings must reach train.)
multi=$(submit multi "${small[@]}" CKPT_EVERY=3 SHARD=optimizer RESULTS_DIR="$work/multi" -- --nodes=2 --ntasks-per-node=1 "$repo/jobs/train_multi_node.sbatch")
single=$(submit single "${small[@]}" GRAD_COMPRESSION=bf16 RESULTS_DIR="$work/single" -- --nodes=1 --ntasks-per-node=2 "$repo/jobs/train_single_node.sbatch")
bench=$(submit bench MIN_BYTES=4 MAX_BYTES=262144 ITERS=5 BACKENDS=mpi,ring RESULTS_DIR="$work/bench" -- "$repo/jobs/bench_collectives.sbatch")
printf '%s\n' 'echo "# site file: sourced"' 'export MDDP_SITE_MARK=1' >"$work/site.sh"
# docs/hpc.md's first job: the fenced block after its marker, run from a directory with build/microddp.
mkdir -p "$work/first/build" && ln -s "$bin" "$work/first/build/microddp"
sed -n '/submits this block as written/,/^```$/p' "$repo/docs/hpc.md" | sed '1,2d;$d' >"$work/first/train.sbatch"
grep -q "^srun --cpus-per-task" "$work/first/train.sbatch" || fail "no job script found under the marker in docs/hpc.md"
first=$(client sbatch --parsable --chdir="$work/first" --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 "$work/first/train.sbatch")
cpus=$(submit cpus STEPS=3 WIDTH=64 DEPTH=2 GLOBAL_BATCH=16 SRUN_FLAGS=--cpu-bind=cores MICRODDP_SITE_ENV="$work/site.sh" \
         RESULTS_DIR="$work/cpus" -- --nodes=1 --ntasks-per-node=1 --cpus-per-task=2 "$repo/jobs/train_single_node.sbatch")
wait_ok "$multi"; wait_ok "$single"; wait_ok "$bench"; wait_ok "$cpus"; wait_ok "$first"

grep -q "^# summary: 6 steps" "$work"/multi-"$multi".out || fail "multi-node training did not finish"
grep -q '"type":"summary"' "$work"/multi/train_"$multi"_r0.jsonl || fail "multi-node results JSON missing"
grep -q "2 (1 on this node)" "$work"/multi-"$multi".out || fail "multi-node run was not spread over 2 nodes"
ls "$work"/multi/checkpoints/*.h5 >/dev/null || fail "no checkpoint written"
grep -q "^# summary: 6 steps" "$work"/single-"$single".out || fail "single-node training did not finish"
grep -q '"type":"summary"' "$work"/single/train_"$single".jsonl || fail "single-node results JSON missing"
grep -q "^#   memory     : --shard optimizer" "$work"/multi-"$multi".out || fail "SHARD=optimizer did not reach train"
grep -q "^#   compression: bf16" "$work"/single-"$single".out || fail "GRAD_COMPRESSION=bf16 did not reach train"
grep -q '"entries"' "$work"/bench/model.json || fail "no fitted model from the collectives benchmark"
threads=$(sed -n 's/^#   threads    : //p' "$work"/cpus-"$cpus".out)
[ "$threads" = "2 threads (SLURM_CPUS_PER_TASK)" ] || fail "--cpus-per-task=2: train reports '$threads' (want '2 threads (SLURM_CPUS_PER_TASK)')"
grep -q "^# site file: sourced" "$work"/cpus-"$cpus".out && grep -q "^# site env : $work/site.sh" "$work"/cpus-"$cpus".out \
  || fail "MICRODDP_SITE_ENV was not sourced"
echo "ok   --cpus-per-task=2, bound: '$threads'; MICRODDP_SITE_ENV sourced"
grep -q "^# summary: 200 steps" "$work"/first/mddp-train-"$first".out && grep -q '"type":"summary"' "$work/first/train-$first.jsonl" \
  && grep -q "^#   ranks      : 2 (1 on this node)" "$work"/first/mddp-train-"$first".out \
  || fail "docs/hpc.md's first job: $(tail -3 "$work"/first/mddp-train-"$first".out 2>/dev/null)"
echo "ok   docs/hpc.md's first job as written: 200 steps on 2 nodes, results JSON"

# Automatic resume: same checkpoint directory, 9 steps -> continues at step 6.
resume=$(submit resume STEPS=9 WIDTH=128 DEPTH=3 GLOBAL_BATCH=64 CKPT_EVERY=3 RESULTS_DIR="$work/multi" -- --nodes=2 --ntasks-per-node=1 "$repo/jobs/train_multi_node.sbatch")
# The scaling sweep (1 and 2 nodes, strong and weak) + aggregation, with the benchmark's model.
cp "$work/bench/model.json" "$work/model.json"
(cd "$work" && env "${small[@]}" STEPS=4 NODE_COUNTS="1 2" RESULTS_DIR="$work/scaling" MODEL_JSON="$work/model.json" \
   SBATCH_ARGS="--chdir=$work --output=$work/scaling-%j.out" "$here/local_cluster.sh" client "$cluster" "$repo/jobs/sweep.sh" slurm)
read -r -a ids <"$work/scaling/jobids"
wait_ok "$resume"
for id in "${ids[@]}"; do wait_ok "$id" 180; done
grep -Eq "resum|step 6" "$work"/resume-"$resume".out || fail "the second run did not resume from the checkpoint"
grep -q "^# summary: 3 steps in [0-9.]* s (resumed at step 6; now at step 9 of 9)" "$work"/resume-"$resume".out \
  || fail "resumed training did not finish (3 steps from step 6)"
for f in scaling.csv phases.csv scaling_efficiency.png step_phases.png; do
  [ -s "$work/scaling/$f" ] || fail "aggregation did not produce $f"
done
head -c 8 "$work/scaling/scaling_efficiency.png" | od -c | grep -q "P   N   G" || fail "scaling_efficiency.png is not a PNG"
[ "$(grep -c '^strong,\|^weak,' "$work/scaling/scaling.csv")" = 8 ] || fail "scaling.csv should have 8 rows (2 modes x 2 strategies x 2 node counts)"
grep -q "efficiency_predicted" "$work/scaling/scaling.csv" || fail "no predicted column"
echo "slurm end-to-end: OK in $((SECONDS - t0)) s"

# 5. Elastic training on Slurm (jobs/train_elastic.sbatch, --no-kill): node 2 crashes once a
#    checkpoint exists; the job must restart on node 1 alone and finish with the parameters of a
#    1-rank run continued from the checkpoint it resumed. Last, because node 2 stays down.
read -r node1 _ <<<"$("$CLUSTER" hosts | head -1)"; read -r node2 _ <<<"$("$CLUSTER" hosts | sed -n 2p)"
E=(--width 64 --depth 4 --global-batch 64 --threads 1 --steps 6000)
el=$(submit elastic STEPS=6000 WIDTH=64 DEPTH=4 GLOBAL_BATCH=64 STRATEGY=naive CKPT_EVERY=200 MAX_RESTARTS=2 \
       EXTRA_ARGS="--keep 0 --log-every 2000" RESULTS_DIR="$work/elastic" -- "$repo/jobs/train_elastic.sbatch")
for _ in $(seq 300); do
  [ -e "$work/elastic/checkpoints/ckpt_0000000200.h5" ] && break
  [ -n "$(client squeue -h -j "$el" 2>/dev/null)" ] || fail "elastic: the job ended before its first checkpoint"
  sleep 0.2
done
[ -e "$work/elastic/checkpoints/ckpt_0000000200.h5" ] || fail "elastic: no checkpoint after 60 s"
t_fail=$SECONDS
"$CLUSTER" fail "$node2"
wait_ok "$el" 120 || fail "elastic job did not complete after $node2 crashed"
out=$work/elastic-$el.out
line=$(grep "^# elastic: restart " "$out") || fail "elastic: no restart line"
[ "$(wc -l <<<"$line")" = 1 ] || fail "elastic: more than one restart: $line"
grep -q "lost host(s): $node2 (probes" <<<"$line" && grep -q "world size 2 -> 1" <<<"$line" \
  || fail "elastic: the restart line does not name $node2 and 'world size 2 -> 1': $line"
grep -q "^# elastic: training finished after 1 restart" "$out" || fail "elastic: training did not finish"
loaded=$(sed -n '/^# elastic: restart /,$ s/^# resume: loaded \(.*\) (step [0-9]*)$/\1/p' "$out")
[ -n "$loaded" ] || fail "elastic: the restart loaded no checkpoint"
mkdir "$work/elastic/ref"; cp "$loaded" "$work/elastic/ref/"
ref=$(client srun --nodes=1 --ntasks=1 --nodelist="$node1" "$bin" train "${E[@]}" --strategy naive \
        --resume "$work/elastic/ref/$(basename "$loaded")" --checkpoint-dir "$work/elastic/ref/out" | sed -n 's/.*parameter checksum //p')
got=$(sed -n 's/.*parameter checksum //p' "$out" | tail -1)
[ -n "$ref" ] && [ "$got" = "$ref" ] || fail "elastic: final checksum '$got', 1 rank continued from $(basename "$loaded"): '$ref'"
echo "ok   elastic on Slurm: $node2 crashed, job done $((SECONDS - t_fail)) s later; $(sed 's/^# elastic: //' <<<"$line"); checksum $got = 1-rank run from the same checkpoint"
echo "slurm end-to-end with the elastic case: OK in $((SECONDS - t0)) s"
