#!/bin/bash
# measure_hier.sh MICRODDP OUTDIR — the measurements behind docs/hierarchical.md: the flat ring,
# recursive doubling, the MPI library and the hierarchical all-reduce side by side on emulated
# hosts (cluster.sh), and the per-link-class fits that predict them. Not a test: it writes CSV
# files and analyze reports into OUTDIR and prints what it ran.
#
#   1. 2 hosts x 2 ranks, every link at RATE: `bench collectives --backends mpi,ring,rd,hier`
#   2. the fits: the ring on 2 ranks of one host (intra) and on 1 rank per host (inter), same links
#   3. analyze --bench-intra --bench-inter --bench (1): predicted vs measured, ring vs hier
#   4. heterogeneous links: host 2 at RATE/10 (SLOW_RATE), the others at RATE: ring and hier at
#      2 hosts x 2 ranks
#   5. 3 hosts, 16 MiB: the ring on 1 rank per host with every link at RATE, then with host 2 at
#      SLOW_RATE; ring and hier at 3 x 2 with host 2 slow; and 2 vs 3 hosts x 1 rank with every link
#      at SLOW_RATE (a 2-rank ring exchanges both ways over one connection)
# Settings (environment): RATE [1gbit], SLOW_RATE [100mbit], MIN_BYTES [4096], MAX_BYTES [64 MiB],
# ITERS [5], WARMUP [1], HET_MAX_BYTES [16 MiB], HETEROGENEOUS [1] (0: skip 4);
# MDDP_CLUSTER_TBF_BURST [1mb: docs/cluster.md, a loaded machine needs it].
# Uses an instance of its own (MDDP_CLUSTER=hiermeas-<pid>), torn down on exit. Exit 77 where the
# cluster cannot run.
set -euo pipefail
# shellcheck source=cluster_lib.sh
source "$(dirname "$0")/cluster_lib.sh"
cluster_measure_begin hiermeas measure_hier.sh "$@"
RATE=${RATE:-1gbit} SLOW_RATE=${SLOW_RATE:-100mbit}
B=(bench collectives --ops allreduce --min-bytes "${MIN_BYTES:-4096}" --max-bytes "${MAX_BYTES:-67108864}" --factor 4
   --iters "${ITERS:-5}" --warmup "${WARMUP:-1}")
"$C" up 2 2>/dev/null
"$C" shape "$RATE" 2>/dev/null
cluster_measure_provenance "$RATE"

measure_run "$C" mpirun --slots 2 -np 4 "$bin" "${B[@]}" --backends mpi,ring,rd,hier --csv "$out/2x2.csv"
measure_run "$C" mpirun --slots 1 -np 2 "$bin" "${B[@]}" --backends ring --csv "$out/inter.csv"
measure_run "$C" mpirun --slots 2 -np 2 "$bin" "${B[@]}" --backends ring --csv "$out/intra.csv"
measure_run "$bin" analyze --bench-intra "$out/intra.csv" --bench-inter "$out/inter.csv" --bench "$out/2x2.csv" \
  --nodes 2 --ranks-per-node 2 --json "$out/analyze_2x2.json" | tee "$out/analyze_2x2.txt"

[ "${HETEROGENEOUS:-1}" = 1 ] || exit 0
"$C" shape "$SLOW_RATE" h2 2>/dev/null
echo "# heterogeneous: h1 at $RATE, h2 at $SLOW_RATE; load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/provenance.txt"
H=(bench collectives --ops allreduce --min-bytes 1048576 --max-bytes "${HET_MAX_BYTES:-16777216}" --factor 4
   --iters "${ITERS:-5}" --warmup "${WARMUP:-1}")
measure_run "$C" mpirun --slots 2 -np 4 "$bin" "${H[@]}" --backends ring,hier --csv "$out/2x2_slow_h2.csv"

"$C" down 2>/dev/null
"$C" up 3 2>/dev/null
"$C" shape "$RATE" 2>/dev/null
T=(bench collectives --ops allreduce --min-bytes 16777216 --max-bytes 16777216 --iters 3 --warmup 1)
echo "# 3 hosts at $RATE; load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/provenance.txt"
measure_run "$C" mpirun --slots 1 -np 3 "$bin" "${T[@]}" --backends ring --csv "$out/3x1.csv"
"$C" shape "$SLOW_RATE" h2 2>/dev/null
echo "# 3 hosts, h2 at $SLOW_RATE; load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/provenance.txt"
measure_run "$C" mpirun --slots 1 -np 3 "$bin" "${T[@]}" --backends ring --csv "$out/3x1_slow_h2.csv"
measure_run "$C" mpirun --slots 2 -np 6 "$bin" "${T[@]}" --backends ring,hier --csv "$out/3x2_slow_h2.csv"
"$C" shape "$SLOW_RATE" 2>/dev/null
echo "# every link at $SLOW_RATE; load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/provenance.txt"
measure_run "$C" mpirun --slots 1 -np 3 "$bin" "${T[@]}" --backends ring --csv "$out/3x1_all_slow.csv"
measure_run "$C" mpirun --slots 1 -np 2 "$bin" "${T[@]}" --backends ring --csv "$out/2x1_all_slow.csv"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/provenance.txt"
# The figure of docs/hierarchical.md (Debian's python3-matplotlib; skipped without it).
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  /usr/bin/python3 "$(dirname "$0")/plot_hier.py" "$out" "$out/hier_busbw.png"
fi
