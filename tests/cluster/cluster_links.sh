#!/bin/bash
# cluster_links.sh MICRODDP — `microddp bench links` names the host whose link is slow, on 3
# emulated hosts x 1 rank (docs/hierarchical.md, "Naming the slow host"):
#   1. links at 1 Gbit/s, h2's at 100 Mbit/s (both directions): the verdict names h2, and only h2;
#   2. every link at 1 Gbit/s: "no slow host";
#   3. 2 hosts: "cannot tell which of the 2 hosts" (every inter-host pair involves both);
#   4. 2 ranks on one host: "one host", exit 0.
# 1 MiB transfers, 3 timed per pair: a pair over the 100 Mbit/s link takes about 0.4 s, the whole
# test well under a minute. The 10x ratio against the 0.5 threshold leaves a factor 5 for noise on
# a shared machine.
set -euo pipefail
bin=$(readlink -f "$1")
# shellcheck source=cluster_lib.sh
source "$(dirname "$0")/cluster_lib.sh"
cluster_test_begin links
C=$CLUSTER
N=$MDDP_CLUSTER
t0=$SECONDS
fail() { echo "FAIL: $*"; exit 1; }
links=(bench links --bytes 1048576 --iters 3 --warmup 1)
verdict() { sed -n 's/^# verdict: //p' <<<"$1"; }

"$C" up 3
"$C" shape 1gbit
"$C" shape 100mbit h2
out=$("$C" mpirun -np 3 "$bin" "${links[@]}" 2>&1) || fail "bench links exited $?: $out"
echo "$out" | sed 's/^/    /'
v=$(verdict "$out")
[[ $v == "slow host: $N-h2 ("* ]] || fail "with h2 at 100 Mbit/s the verdict is '$v', expected 'slow host: $N-h2 (...)'"
[ "$(grep -o "slow host: " <<<"$v" | wc -l)" = 1 ] || fail "more than one host named: '$v'"
echo "ok   h2 at 100 Mbit/s, the others at 1 Gbit/s: $v"

"$C" shape 1gbit
out=$("$C" mpirun -np 3 "$bin" "${links[@]}" 2>&1) || fail "bench links exited $?: $out"
v=$(verdict "$out")
[[ $v == "no slow host ("* ]] || fail "with every link at 1 Gbit/s the verdict is '$v', expected 'no slow host (...)'"
echo "ok   every link at 1 Gbit/s: $v"

out=$("$C" mpirun -np 2 "$bin" "${links[@]}" 2>&1) || fail "bench links on 2 hosts exited $?: $out"
v=$(verdict "$out")
[[ $v == "cannot tell which of the 2 hosts is slow: "* ]] || fail "on 2 hosts the verdict is '$v'"
echo "ok   2 hosts: $v"

out=$("$C" mpirun --slots 2 -np 2 "$bin" "${links[@]}" 2>&1) || fail "bench links on one host exited $?: $out"
v=$(verdict "$out")
[ "$v" = "one host ($N-h1): no inter-host pairs, no link to judge" ] || fail "on one host the verdict is '$v'"
echo "ok   one host: $v"
echo "cluster links: OK in $((SECONDS - t0)) s"
