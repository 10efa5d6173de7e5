#!/bin/bash
# measure_scaling.sh MICRODDP OUTDIR — the scaling study behind docs/performance.md ("Scaling across
# emulated hosts"): strong and weak scaling on 1, 2 and 4 emulated hosts (cluster.sh), one rank per
# host, every link at RATE, run through the job scripts of a real sweep (jobs/scaling_point.sbatch,
# then jobs/aggregate.sbatch) with the cluster's mpirun as the launcher (jobs/lib/common.sh:
# MPIRUN). Not a test: it writes OUTDIR/scaling.csv, phases.csv, scaling_efficiency.png,
# step_phases.png, the runs' JSONL and analyze reports, and prints what it ran.
#
#   1. 2 hosts x 1 rank, links at RATE: `bench collectives` of the training backend (mpi), fitted
#      (`analyze --fit --bench`) into OUTDIR/model.json: the network the predictions use
#   2. for each host count in HOSTS: a fresh cluster of that many hosts, links at RATE, then
#      scaling_point.sbatch (MODES x STRATEGIES, STEPS steps each, --threads 1)
#   3. aggregate.sbatch with MODEL_JSON=OUTDIR/model.json: per (mode, strategy) `analyze` of the
#      1-host run (its measured compute) predicts every rank count; aggregate.py writes the CSV
#      (measured next to predicted efficiency) and the plots
# The hosts share this machine's cores. One rank per host and one BLAS thread per rank: at 1 and 2
# hosts every rank has a core to itself on a 2-core machine; at 4 hosts the ranks time-slice, and
# scaling.csv's forward_ms/backward_ms show by how much that inflated compute (the prediction scales
# the 1-host compute and knows nothing of it).
# Settings (environment): RATE [2gbit], HOSTS [1 2 4], WIDTH [512], DEPTH [4], GLOBAL_BATCH [512]
# (strong), BATCH_PER_RANK [256] (weak), STEPS [40], MODES [strong weak], STRATEGIES [flat bucketed],
# BUCKET_MB [1], ITERS [5] (per bench collectives size), MAX_BYTES [64 MiB: the fit must see
# transfers well past the token bucket's burst, docs/performance.md "Burst credit"],
# MDDP_CLUSTER_TBF_BURST [1mb: docs/cluster.md, a loaded machine needs it].
# Uses an instance of its own (MDDP_CLUSTER=scalemeas-<pid>), torn down on exit. Exit 77 where the
# cluster cannot run.
set -euo pipefail
# shellcheck source=cluster_lib.sh
source "$(dirname "$0")/cluster_lib.sh"
cluster_measure_begin scalemeas measure_scaling.sh "$@"
jobs=$(cd "$(dirname "$0")/../../jobs" && pwd)
RATE=${RATE:-2gbit} HOSTS=${HOSTS:-1 2 4}
# The job scripts' tunables (scaling_point.sbatch, aggregate.sbatch), with this study's defaults.
export WIDTH=${WIDTH:-512} DEPTH=${DEPTH:-4} GLOBAL_BATCH=${GLOBAL_BATCH:-512} BATCH_PER_RANK=${BATCH_PER_RANK:-256}
export STEPS=${STEPS:-40} MODES=${MODES:-strong weak} STRATEGIES=${STRATEGIES:-flat bucketed}
export BUCKET_MB=${BUCKET_MB:-1} COMM=mpi DEVICE=cpu OPENBLAS_NUM_THREADS=1
export MDDP_JOBS_DIR=$jobs RESULTS_DIR=$out MICRODDP_BIN=$bin LAUNCHER=mpirun
rm -f "$out"/*_n*_*.jsonl "$out"/predicted_*.json "$out"/model.json  # no stale point is aggregated

"$C" up 2 2>/dev/null
"$C" shape "$RATE" 2>/dev/null
cluster_measure_provenance "$RATE"
echo "# model: width $WIDTH, depth $DEPTH, strong batch $GLOBAL_BATCH, weak $BATCH_PER_RANK per rank; $STEPS steps;" \
  "strategies $STRATEGIES (bucket cap $BUCKET_MB MiB); one rank per host, 1 BLAS thread" | tee -a "$out/provenance.txt"
measure_run "$C" mpirun --slots 1 -np 2 "$bin" bench collectives --ops allreduce --backends mpi --min-bytes 4 \
  --max-bytes "${MAX_BYTES:-67108864}" --factor 4 --iters "${ITERS:-5}" --warmup 1 --csv "$out/inter.csv" >"$out/inter.txt"
measure_run "$bin" analyze --fit --bench "$out/inter.csv" --fit-out "$out/model.json" | tee "$out/fit.txt"

for n in $HOSTS; do
  "$C" down 2>/dev/null
  "$C" up "$n" 2>/dev/null
  "$C" shape "$RATE" 2>/dev/null
  echo "# $n host(s) at $RATE: load $(cut -d' ' -f1-3 /proc/loadavg) at $(date -Is)" | tee -a "$out/provenance.txt"
  MPIRUN="$C mpirun --slots 1" NTASKS=$n measure_run bash "$jobs/scaling_point.sbatch" >"$out/point_n$n.log"
done
"$C" down 2>/dev/null
echo "# load after the points: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/provenance.txt"

# Aggregation on this machine (no network: analyze reads the records and the fitted model).
MODEL_JSON=$out/model.json BURST_CREDIT=idle measure_run bash "$jobs/aggregate.sbatch" >"$out/aggregate.log"
column -s, -t <"$out/scaling.csv"
