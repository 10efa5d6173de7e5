#!/bin/bash
# measure_links.sh CLUSTER_PROBE — the measurements behind docs/cluster.md ("Shaping"): what the
# emulated links deliver to MPI for each tbf rate x bucket (burst) x queue (latency), and with
# Open MPI's TCP socket buffers fixed instead of left to the kernel. Not a test: it prints a table.
#
# Each cell: 2 ranks, one per host, rank 0 streams MIB MiB to rank 1 (cluster_probe); the median of
# REPEATS runs and the range. "wire/payload" is the bytes the link counted per byte sent: 1.00 when
# the veth's 64 KiB GSO packets pass whole, about 1.05 when tbf cuts them into 1500-byte frames
# (each with its own headers). The nominal rate counts those headers too, so an MPI payload reaches
# at most 1448/1514 = 95.6% of it with 1500-byte frames.
#
# Settings (environment): RATES ["1gbit 10gbit"], BURSTS ["64k 128k 1mb 4mb"], LATENCIES ["20ms"],
# BUFS ["0"] (btl_tcp_sndbuf = btl_tcp_rcvbuf; 0 = kernel autotuning, Open MPI 4.1's default),
# REPEATS [3], MIB [64]; UNSHAPED [1]: also measure without tbf. Uses an instance of its own
# (MDDP_CLUSTER=measure-<pid>), torn down on exit. Exit 77 where the cluster cannot run.
set -euo pipefail
probe=$(readlink -f "${1:?usage: measure_links.sh CLUSTER_PROBE}")
[ -x "$probe" ] || { echo "measure_links.sh: error: $probe is not an executable" >&2; exit 2; }
# shellcheck source=cluster_lib.sh
source "$(dirname "$0")/cluster_lib.sh"
cluster_test_begin measure
C=$CLUSTER
"$C" up 2 2>/dev/null

# run_cell BUF: prints "median min max wire/payload" over REPEATS runs.
run_cell() {
  local buf=$1 out vals=() wire=""
  for _ in $(seq "${REPEATS:-3}"); do
    out=$("$C" mpirun -np 2 --mca btl_tcp_sndbuf "$buf" --mca btl_tcp_rcvbuf "$buf" "$probe" --mib "${MIB:-64}" --pingpongs 10 |
          grep "^transfer same_host=0 ")
    vals+=("$(awk '{print $12}' <<<"$out")")
    wire=$(awk '{printf "%.3f", $14 / $6}' <<<"$out")
  done
  printf '%s\n' "${vals[@]}" | sort -g | awk -v w="$wire" '{ v[NR] = $1 } END { printf "%.3f %.3f %.3f %s", v[int((NR + 1) / 2)], v[1], v[NR], w }'
}

nominal_gbit() { case "$1" in *gbit) echo "${1%gbit}" ;; *mbit) awk -v m="${1%mbit}" 'BEGIN { print m / 1000 }' ;; esac; }

echo "# $(date -Is) $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(mpirun --version | head -1)"
printf '%-8s %-6s %-8s %-8s %8s %17s %7s %13s\n' rate burst latency sndbuf Gbit/s "(min-max)" "%nom" wire/payload
for buf in ${BUFS:-0}; do
  if [ "${UNSHAPED:-1}" = 1 ]; then
    "$C" shape none 2>/dev/null
    read -r med lo hi wire <<<"$(run_cell "$buf")"
    printf '%-8s %-6s %-8s %-8s %8s %17s %7s %13s\n' none - - "$buf" "$med" "($lo-$hi)" - "$wire"
  fi
  for rate in ${RATES:-1gbit 10gbit}; do
    for burst in ${BURSTS:-64k 128k 1mb 4mb}; do
      for lat in ${LATENCIES:-20ms}; do
        MDDP_CLUSTER_TBF_BURST=$burst MDDP_CLUSTER_TBF_LATENCY=$lat "$C" shape "$rate" 2>/dev/null
        read -r med lo hi wire <<<"$(run_cell "$buf")"
        printf '%-8s %-6s %-8s %-8s %8s %17s %7s %13s\n' "$rate" "$burst" "$lat" "$buf" "$med" "($lo-$hi)" \
          "$(awk -v m="$med" -v n="$(nominal_gbit "$rate")" 'BEGIN { printf "%.1f", 100 * m / n }')" "$wire"
      done
    done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
