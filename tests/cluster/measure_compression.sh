#!/bin/bash
# measure_compression.sh MICRODDP OUTDIR — the speed measurements behind docs/compression.md
# ("Speed on a slow link"): gradient compression side by side, on a shaped link between two emulated
# hosts and on shared memory, with the model's predictions for both. Not a test: it writes CSV/JSON
# files and analyze reports into OUTDIR and prints what it ran.
#
#   1. 2 hosts x 1 rank, every link at RATE: `bench collectives` of the mpi all-reduce (the fit the
#      predictions use; up to 64 MiB so that two sizes lie beyond the token bucket's burst and the
#      fit sees the link's sustained rate, docs/performance.md "Burst credit"), then `bench ddp --grad-compression none,bf16,fp16,powersgd`
#   2. the same `bench ddp` with the 2 ranks on one host (shared memory, no shaping)
#   3. `analyze` on the same 2 x 1 placement for each mode: in-process compute and compression cost,
#      the inter-host fit from 1 (--bench; --burst-credit idle: the link is a token bucket, docs/
#      performance.md), so its step prediction can be held against 1; and on
#      the 2 ranks of one host with its in-process fit (shared memory), to hold against 2
# One rank per host keeps the two ranks' compute from time-slicing one core against each other
# more than the 2-core machine forces anyway (the ranks still share the machine's 2 cores).
# Settings (environment): RATE [1gbit], WIDTH [1024], DEPTH [4], BATCH [64], ROUNDS [3], STEPS [3],
# ITERS [5] (of each bench collectives size),
# MDDP_CLUSTER_TBF_BURST [1mb: docs/cluster.md, a loaded machine needs it].
# Uses an instance of its own (MDDP_CLUSTER=compmeas-<pid>), torn down on exit. Exit 77 where the
# cluster cannot run.
set -euo pipefail
# shellcheck source=cluster_lib.sh
source "$(dirname "$0")/cluster_lib.sh"
cluster_measure_begin compmeas measure_compression.sh "$@"
RATE=${RATE:-1gbit}
M=(--width "${WIDTH:-1024}" --depth "${DEPTH:-4}" --global-batch "${BATCH:-64}" --threads 1)
D=(bench ddp "${M[@]}" --strategies bucketed --bucket-mb 4 --grad-compression none,bf16,fp16,powersgd
   --rounds "${ROUNDS:-3}" --steps "${STEPS:-3}")
"$C" up 2 2>/dev/null
"$C" shape "$RATE" 2>/dev/null
cluster_measure_provenance "$RATE"

measure_run "$C" mpirun --slots 1 -np 2 "$bin" bench collectives --ops allreduce --backends mpi --min-bytes 4096 \
  --max-bytes 67108864 --factor 4 --iters "${ITERS:-5}" --warmup 1 --csv "$out/inter.csv"
measure_run "$C" mpirun --slots 1 -np 2 "$bin" "${D[@]}" --json "$out/ddp_2hosts.json" | tee "$out/ddp_2hosts.txt"
measure_run "$C" mpirun --slots 2 -np 2 "$bin" "${D[@]}" --json "$out/ddp_1host.json" | tee "$out/ddp_1host.txt"
for m in none bf16 fp16 powersgd; do
  measure_run "$C" mpirun --slots 1 -np 2 "$bin" analyze "${M[@]}" --strategies bucketed --bucket-mb 4 --steps 3 \
    --grad-compression "$m" --bench "$out/inter.csv" --burst-credit idle --json "$out/analyze_$m.json" >"$out/analyze_$m.txt"
  measure_run "$C" mpirun --slots 2 -np 2 "$bin" analyze "${M[@]}" --strategies bucketed --bucket-mb 4 --steps 3 \
    --grad-compression "$m" --json "$out/analyze_1host_$m.json" >"$out/analyze_1host_$m.txt"
done
echo "# done; load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/provenance.txt"
