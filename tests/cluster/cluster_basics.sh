#!/bin/bash
# cluster_basics.sh CLUSTER_PROBE — the emulated cluster (tests/cluster/cluster.sh) is what it
# claims to be:
#   1. hosts: each has its own hostname, and the others' names resolve to their link addresses;
#   2. MPI on 2 hosts x 2 ranks (cluster_probe): ranks share a node-local communicator
#      (MPI_Comm_split_type SHARED) exactly when they share a host; bytes between the two ranks of
#      a host move through no network device (shared memory), bytes between hosts cross the link;
#   3. shaping, each direction on its own: with one host's link at 100 Mbit/s, the bandwidth
#      between the hosts is below half of the unshaped one (a generous bound, not a timing target);
#   4. `fail` kills a host's processes and makes the agent refuse it (exit 255, as ssh), `recover`
#      undoes it; the hostfile lists only hosts that are up;
#   5. state: a second `up` is refused; an instance whose owner died is removed by the next `up`;
#      leftovers of an interrupted `up` are repaired; two instances on one subnet do not meet;
#      `down` leaves no namespace, state or process behind.
set -euo pipefail
probe=$(readlink -f "$1")
# shellcheck source=cluster_lib.sh
source "$(dirname "$0")/cluster_lib.sh"
cluster_test_begin basics
C=$CLUSTER
N=$MDDP_CLUSTER
t0=$SECONDS
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok   $*"; }
field() { awk -v k="$2" '{ for (i = 1; i < NF; ++i) if ($i == k) { print $(i + 1); exit } }' <<<"$1"; }

# 1. Hosts.
"$C" up 2
[ "$("$C" exec h1 hostname)" = "$N-h1" ] && [ "$("$C" exec "$N-h2" hostname)" = "$N-h2" ] \
  || fail "hostnames inside the hosts: $("$C" exec h1 hostname), $("$C" exec h2 hostname)"
"$C" exec h2 getent hosts "$N-h1" | grep -q "^10.99.0.1 " || fail "$N-h1 does not resolve on $N-h2"
ok "hosts: hostnames $N-h1, $N-h2; names resolve to the link addresses"

# 2. Node grouping, shared memory inside a host, TCP between hosts.
out=$("$C" mpirun --slots 2 -np 4 "$probe" --mib 16 --pingpongs 200)
echo "$out" | sed 's/^/    /'
for r in 0 1 2 3; do
  want=$N-h$((r / 2 + 1))
  line=$(grep "^rank $r " <<<"$out") || fail "no line for rank $r"
  [ "$(field "$line" host)" = "$want" ] || fail "rank $r runs on $(field "$line" host), expected $want (2 slots per host)"
  [ "$(field "$line" node_size)" = 2 ] || fail "rank $r: node-local communicator of size $(field "$line" node_size), expected 2"
done
grep -qx "grouping ok" <<<"$out" || fail "node-local communicators do not match the hostnames"
intra=$(grep "^transfer same_host=1 " <<<"$out") || fail "no transfer inside a host"
inter=$(grep "^transfer same_host=0 " <<<"$out") || fail "no transfer between hosts"
bytes=$(field "$intra" bytes)
net=$(( $(field "$intra" link_bytes) + $(field "$intra" lo_bytes) ))
[ "$net" -lt $((bytes / 100)) ] || fail "inside a host $net network bytes moved for $bytes bytes: not shared memory"
[ "$(field "$inter" link_bytes)" -ge "$(field "$inter" bytes)" ] \
  || fail "between hosts only $(field "$inter" link_bytes) bytes crossed the link for $(field "$inter" bytes)"
unshaped=$(field "$inter" gbit_per_s)
ok "4 ranks: {0,1} on $N-h1, {2,3} on $N-h2, node-local communicators match;" \
   "inside a host $net of $bytes bytes touched a network device (shared memory);" \
   "between hosts $(field "$inter" link_bytes) link bytes, $unshaped Gbit/s unshaped"

# 3. Shaping, one direction at a time: rank 0 (h1) sends to rank 1 (h2).
shaped_gbit() { "$C" mpirun --slots 1 -np 2 "$probe" --mib 8 --pingpongs 10 | grep "^transfer same_host=0 " | awk '{print $12}'; }
"$C" shape 100mbit h2            # switch -> h2: what h2 receives
"$C" status | grep -q "^$N-h2 .* rate 100mbit .*tbf" || fail "status does not show h2's tbf: $("$C" status)"
recv=$(shaped_gbit)
"$C" shape none h2
"$C" shape 100mbit h1            # h1 -> switch: what h1 sends
send=$(shaped_gbit)
"$C" shape none
for pair in "h2 receiving:$recv" "h1 sending:$send"; do
  awk -v s="${pair#*:}" -v u="$unshaped" 'BEGIN { exit !(s < 0.5 * u) }' \
    || fail "${pair%%:*} at 100 Mbit/s moved ${pair#*:} Gbit/s, not below half of the unshaped $unshaped Gbit/s"
done
ok "shaped at 100 Mbit/s: $recv Gbit/s (receiving host limited), $send Gbit/s (sending host limited); unshaped $unshaped Gbit/s"

# 4. A failed host.
"$C" exec h2 sleep 600 &
victim=$!
for _ in $(seq 50); do [ -n "$(ip netns pids "$N-h2")" ] && break; sleep 0.1; done
"$C" fail h2
wait "$victim" 2>/dev/null && fail "a process on the failed host survived"
rc=0; "$C" agent h2 true 2>/dev/null || rc=$?
[ "$rc" = 255 ] || fail "the agent on a failed host exited $rc, expected 255 (as ssh)"
[ "$("$C" hostfile 2)" = "$N-h1 slots=2" ] || fail "hostfile with a failed host: $("$C" hostfile 2)"
"$C" status | grep -q "^$N-h2 .* failed " || fail "status does not show h2 failed"
"$C" recover h2
"$C" agent h2 true || fail "the agent does not reach h2 after recover"
"$C" mpirun -np 2 "$probe" --mib 1 --pingpongs 10 >/dev/null || fail "MPI across the hosts after recover"
ok "fail: the host's processes are killed, agent exit 255, hostfile without it; recover: MPI works again"

# 5. Instance state.
rc=0; "$C" up 2 2>"$WORK/err" || rc=$?
[ "$rc" = 1 ] && grep -q "already up" "$WORK/err" || fail "a second up was not refused (exit $rc): $(cat "$WORK/err")"
sleep 600 & owner=$!
cluster_track "$N-stale"
MDDP_CLUSTER=$N-stale MDDP_CLUSTER_OWNER=$owner "$C" up 1
MDDP_CLUSTER=$N-stale "$C" exec h1 sleep 600 & disown
kill "$owner"; wait "$owner" 2>/dev/null || true
cluster_track "$N-other"
MDDP_CLUSTER=$N-other "$C" up 1 2>"$WORK/err"                # same subnet, another instance
grep -q "removing stale instance '$N-stale'" "$WORK/err" || fail "the next up did not remove the dead owner's instance: $(cat "$WORK/err")"
[ -z "$(cluster_leftovers "$N-stale")" ] || fail "left of the stale instance: $(cluster_leftovers "$N-stale")"
[ "$(MDDP_CLUSTER=$N-other "$C" exec h1 hostname)" = "$N-other-h1" ] || fail "second instance's hostname"
"$C" mpirun -np 2 "$probe" --mib 1 --pingpongs 10 >/dev/null || fail "MPI in the first instance beside a second on the same subnet"
MDDP_CLUSTER=$N-other "$C" down
cluster_track "$N-half"
ip netns add "$N-half-h1"                                         # what an interrupted up leaves
MDDP_CLUSTER=$N-half "$C" up 1 2>"$WORK/err"
grep -q "repairing" "$WORK/err" || fail "up over leftovers did not say it repaired them: $(cat "$WORK/err")"
MDDP_CLUSTER=$N-half "$C" down
ok "state: second up refused; dead owner's instance removed; leftovers repaired; two instances on one subnet"

"$C" exec h1 sleep 600 & disown
for _ in $(seq 50); do [ -n "$(ip netns pids "$N-h1")" ] && break; sleep 0.1; done
"$C" down
sleep 0.2
left=$(cluster_leftovers "$N")
[ -z "$left" ] || fail "down left: $left"
"$C" status >/dev/null 2>&1 && fail "status after down reports the instance up"
ok "down: no namespace, state or process left"
echo "cluster basics: OK in $((SECONDS - t0)) s"
