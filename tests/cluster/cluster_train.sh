#!/bin/bash
# cluster_train.sh MICRODDP MPIEXEC [MPIEXEC_FLAGS...] — `microddp train` on 2 emulated hosts x 2
# ranks, over 1 Gbit/s shaped links, ends with the same parameter checksum as the same 4 ranks on
# this one machine: the transports (shared memory inside a host, TCP between hosts) change where
# the bytes travel, never the arithmetic. Two configurations: the default strategy on the MPI
# library's collectives, and bucketed over our own ring all-reduce. The run must also see the
# node layout ("4 (2 on this node)"). Third, the hierarchical all-reduce (`--comm hier`): on the
# hosts it must find 2 nodes by itself (MPI_COMM_TYPE_SHARED) and end bit for bit where the 4 ranks
# of this machine end with the same nodes given by MICRODDP_HIER_NODE_SIZES=2 (the reduction order
# follows the nodes, so a wrong grouping would change the bits).
set -euo pipefail
bin=$(readlink -f "$1"); shift
mpiexec=("$@")
# shellcheck source=cluster_lib.sh
source "$(dirname "$0")/cluster_lib.sh"
cluster_test_begin train
C=$CLUSTER
t0=$SECONDS
fail() { echo "FAIL: $*"; exit 1; }
checksum() { sed -n 's/.*parameter checksum \([0-9a-f]*\).*/\1/p' <<<"$1"; }

"$C" up 2
"$C" shape 1gbit
A=(train --width 64 --depth 4 --global-batch 64 --threads 1 --steps 30 --log-every 10 --comm-timeout 60)
for config in "--comm mpi" "--comm ring --strategy bucketed --bucket-mb 0.02" "--comm hier --strategy bucketed --bucket-mb 0.02"; do
  # shellcheck disable=SC2206
  extra=($config)
  ref_out=$(MICRODDP_HIER_NODE_SIZES=2 "${mpiexec[@]}" -np 4 "$bin" "${A[@]}" "${extra[@]}" 2>&1)
  ref=$(checksum "$ref_out")
  [ -n "$ref" ] || fail "$config: the single-host run printed no checksum: $ref_out"
  out=$("$C" mpirun --slots 2 -np 4 "$bin" "${A[@]}" "${extra[@]}" 2>&1)
  got=$(checksum "$out")
  if [[ $config == *hier* ]]; then
    grep -q "hier: 2 node(s), 2 rank(s) on rank 0's node, 2 shard(s)" <<<"$out" ||
      fail "$config: the 2-host run did not find 2 nodes of 2: $(grep 'hier:' <<<"$out")"
  fi
  grep -q "ranks      : 4 (2 on this node)" <<<"$out" || fail "$config: the 2-host run does not see 2 ranks per node: $(grep 'ranks ' <<<"$out")"
  [ "$got" = "$ref" ] || fail "$config: 2 hosts x 2 ranks end with checksum '$got', 1 host x 4 ranks with '$ref'"
  echo "ok   $config: 2 hosts x 2 ranks over 1 Gbit/s links = 1 host x 4 ranks (checksum $got)"
done
echo "cluster train: OK in $((SECONDS - t0)) s"
