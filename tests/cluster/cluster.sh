#!/bin/bash
# cluster.sh — an emulated cluster on one Linux machine: N "hosts", each with its own network
# namespace and hostname, joined through a bridge by rate-limited links, and Open MPI launched
# across them. Ranks on different hosts talk TCP over the shaped links; ranks on one host use
# shared memory, exactly as on a real cluster. All hosts still share this machine's cores.
# Pitfalls and measurements: docs/cluster.md.
#
# Usage: cluster.sh COMMAND [ARGS...]      (root; iproute2's `ip` and `tc`, util-linux)
#   up N                 create hosts 1..N (1 <= N <= 250); refuses when this instance is already
#                        up, repairs (removes, with a message) what a dead or interrupted one left
#   down                 kill every process on the hosts, delete the namespaces and the state
#                        (idempotent: exit 0 when nothing is up)
#   shape RATE [HOST...] token-bucket rate limit (tc tbf) on the listed hosts' links, default all,
#                        both directions (host->switch and switch->host); RATE like 1gbit, 500mbit,
#                        or `none` to remove it. Different hosts may get different rates.
#   status               one line per host: address, state (up/failed), rate, processes, qdisc;
#                        exit 1 when the instance is down
#   exec HOST CMD...     run CMD on HOST (its network namespace; a private UTS namespace with
#                        hostname = the host's name; /etc/hosts naming every host)
#   run CMD...           run CMD on the first host up, with Open MPI set up for the cluster: the
#                        launcher agent below, the hosts' subnet for MPI and bootstrap traffic, no
#                        core binding, yielding while waiting (each overridable by its OMPI_MCA_
#                        variable but the agent and subnet); MDDP_CLUSTER_HOSTFILE names a hostfile
#                        of the hosts that are up, MDDP_CLUSTER_SLOTS [1] slots each
#   mpirun [--slots S] ARGS...   `run mpirun --hostfile <hostfile with S slots per host> ARGS`
#   hostfile [SLOTS]     print an Open MPI hostfile of the hosts that are up [SLOTS 1]
#   fail HOST            emulate a crash of HOST: SIGKILL every process on it, then take its link
#                        down; the agent then refuses it like ssh refuses a dead machine (exit 255)
#   recover HOST         bring a failed host's link back
#   agent [-opts] HOST CMD...   ssh-like launcher agent (Open MPI's plm_rsh_agent): CMD's words are
#                        joined into one shell line and run on HOST
#   hosts                one line per host: NAME ADDRESS up|failed (for scripts)
#   list                 the instances on this machine and their owners
#   gc                   remove every instance whose owner process (MDDP_CLUSTER_OWNER) has exited
# Host names: "<instance>-h<i>" (also the hostname); commands accept the short "h<i>" too.
#
# Settings (environment):
#   MDDP_CLUSTER         instance name: namespaces, hostnames and state are prefixed with it, so
#                        instances never meet (tests use their own) [mddp]
#   MDDP_CLUSTER_SUBNET  first three octets of the hosts' /24; host i is <subnet>.i [10.99.0]
#                        (instances may share it: every instance is its own set of namespaces)
#   MDDP_CLUSTER_OWNER   pid that owns the instance (`up` records it with its start time): once it
#                        has exited, `gc` and every later `up` remove the instance. Test harnesses
#                        set it, so that even a SIGKILLed test leaves nothing for long. [none]
#   MDDP_CLUSTER_SLOTS   slots per host in the hostfile of `run` [1]
#   MDDP_CLUSTER_TBF_BURST    tbf bucket size, in tc's units [max(128 KiB, 1 ms of the rate)]
#   MDDP_CLUSTER_TBF_LATENCY  tbf queue, as the longest wait a packet may see [20ms]
#   MDDP_CLUSTER_STATE   state directory root [/run/mddp-cluster]
# Exit codes: 0 ok, 1 failure (message on stderr), 2 bad usage; `exec`/`run`/`mpirun` return the
# command's exit code; `agent` 255 when the host is down (as ssh).
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
NAME=${MDDP_CLUSTER:-mddp}
SUBNET=${MDDP_CLUSTER_SUBNET:-10.99.0}
STATE_ROOT=${MDDP_CLUSTER_STATE:-/run/mddp-cluster}
STATE=$STATE_ROOT/$NAME
SW=$NAME-sw

log() { printf '[cluster %s] %s\n' "$NAME" "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage_error() { log "error: $*"; echo "usage: see the header of $SELF" >&2; exit 2; }

[[ $NAME =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] || usage_error "MDDP_CLUSTER='$NAME': use 1-40 of [a-z0-9-], starting with a letter or digit"
[[ $SUBNET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || usage_error "MDDP_CLUSTER_SUBNET='$SUBNET': give three octets, e.g. 10.99.0"
# Open MPI splits plm_rsh_agent at spaces: the agent's path must not contain any.
[[ $SELF != *" "* ]] || die "the path of this script ($SELF) contains a space; Open MPI's launcher agent cannot be given such a path"

need_tools() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces, tc)"
  local t
  for t in ip tc nsenter unshare flock; do command -v "$t" >/dev/null || die "'$t' not found (apt-get install iproute2 util-linux)"; done
}

# ---- instance state --------------------------------------------------------------------------
# $STATE/config holds N, OWNER_PID, OWNER_START; $STATE/complete marks a finished `up`;
# $STATE/rate.<host>, $STATE/failed.<host>; $STATE/etc_hosts is every host's /etc/hosts.

nhosts() { sed -n 's/^N=//p' "$STATE/config" 2>/dev/null || echo 0; }
host_name() { echo "$NAME-h$1"; }

# host_index NAME-hI | hI -> I (must exist)
host_index() {
  local h=$1 n i
  n=$(nhosts)
  [ "$n" -gt 0 ] || die "instance '$NAME' is not up (cluster.sh up N)"
  i=${h#"$NAME-"}; i=${i#h}
  [[ $i =~ ^[0-9]+$ ]] && [ "$i" -ge 1 ] && [ "$i" -le "$n" ] || die "no host '$h' in instance '$NAME' (hosts h1..h$n)"
  echo "$i"
}

proc_start() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}'; }  # field 22: start time

# owner_gone DIR: true when DIR's instance has an owner and that process no longer exists (a
# recycled pid is told apart by its start time).
owner_gone() {
  local pid start
  pid=$(sed -n 's/^OWNER_PID=//p' "$1/config" 2>/dev/null)
  [ -n "$pid" ] || return 1
  start=$(sed -n 's/^OWNER_START=//p' "$1/config")
  [ "$(proc_start "$pid")" != "$start" ]
}

# The namespaces of an instance, whatever its state file says (an interrupted `up` leaves some).
instance_netns() { ip netns list | awk '{print $1}' | grep -E "^$1-(h[0-9]+|sw)\$" || true; }

kill_netns_pids() {  # SIGKILL every process in namespace $1, wait until none is left (5 s)
  local ns=$1 i pids
  for i in $(seq 50); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
  log "warning: processes still in $ns after 5 s: $(ip netns pids "$ns" | tr '\n' ' ')"
}

# teardown NAME: remove every trace of instance NAME (processes, namespaces, state).
teardown() {
  local name=$1 ns
  for ns in $(instance_netns "$name"); do kill_netns_pids "$ns"; done
  for ns in $(instance_netns "$name"); do ip netns del "$ns" 2>/dev/null || log "warning: could not delete namespace $ns"; done
  rm -rf "${STATE_ROOT:?}/$name"
}

with_lock() {  # with_lock NAME CMD...: one `up`/`down`/`gc` per instance at a time
  local name=$1 try; shift
  # `down` and `gc` remove the state directory when it is empty, so another instance's `down` may
  # remove it between our mkdir and our open: try again.
  for try in 1 2 3; do
    mkdir -p "$STATE_ROOT"
    { exec 9>"$STATE_ROOT/$name.lock"; } 2>/dev/null && break
    [ "$try" -lt 3 ] || die "cannot create the lock file $STATE_ROOT/$name.lock"
  done
  flock -w 60 9 || die "instance '$name' is locked by another cluster.sh for 60 s"
  "$@"
  exec 9>&-
}

gc_one() {
  local name=$1
  [ -d "$STATE_ROOT/$name" ] && owner_gone "$STATE_ROOT/$name" || return 0
  log "removing stale instance '$name': its owner (pid $(sed -n 's/^OWNER_PID=//p' "$STATE_ROOT/$name/config")) has exited"
  teardown "$name"
  rm -f "$STATE_ROOT/$name.lock"
}

cmd_gc() {
  local d
  [ -d "$STATE_ROOT" ] || return 0
  for d in "$STATE_ROOT"/*/; do
    [ -d "$d" ] || continue
    with_lock "$(basename "$d")" gc_one "$(basename "$d")"
  done
  rmdir "$STATE_ROOT" 2>/dev/null || true
}

# ---- up / down -------------------------------------------------------------------------------

do_up() {
  local n=$1 i ns h
  if [ -f "$STATE/complete" ] && ! owner_gone "$STATE"; then
    die "instance '$NAME' is already up ($(nhosts) hosts); run 'cluster.sh down' first, or set MDDP_CLUSTER to another name"
  fi
  if [ -d "$STATE" ] || [ -n "$(instance_netns "$NAME")" ]; then
    log "repairing: removing what an earlier instance '$NAME' left ($(instance_netns "$NAME" | tr '\n' ' ')$( [ -d "$STATE" ] && echo "state $STATE"))"
    teardown "$NAME"
  fi
  mkdir -p "$STATE"
  {
    echo "N=$n"
    if [ -n "${MDDP_CLUSTER_OWNER:-}" ]; then
      [ -r "/proc/$MDDP_CLUSTER_OWNER/stat" ] || die "MDDP_CLUSTER_OWNER=$MDDP_CLUSTER_OWNER is not a running process"
      echo "OWNER_PID=$MDDP_CLUSTER_OWNER"; echo "OWNER_START=$(proc_start "$MDDP_CLUSTER_OWNER")"
    fi
  } >"$STATE/config"
  {
    echo "127.0.0.1 localhost"
    for i in $(seq 1 "$n"); do echo "$SUBNET.$i $(host_name "$i")"; done
  } >"$STATE/etc_hosts"
  # The switch: a bridge in a namespace of its own, so nothing is added to the root namespace and
  # no host has a route out of the emulated network.
  ip netns add "$SW"
  ip -n "$SW" link add br0 type bridge
  ip -n "$SW" link set br0 up
  for i in $(seq 1 "$n"); do
    ns=$(host_name "$i")
    ip netns add "$ns"
    # A new namespace's loopback is down: anything talking to 127.0.0.1 or to its own address
    # (Slurm daemons, munge clients, a rank connecting to a local peer over TCP) would fail.
    ip -n "$ns" link set lo up
    # The pair is made inside the host (its end is eth0 there) and one end moved to the switch.
    ip -n "$ns" link add eth0 type veth peer name "p$i"
    ip -n "$ns" link set "p$i" netns "$SW"
    ip -n "$SW" link set "p$i" master br0
    ip -n "$SW" link set "p$i" up
    ip -n "$ns" addr add "$SUBNET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  touch "$STATE/complete"
  log "up: $n hosts $(host_name 1)..$(host_name "$n") = $SUBNET.1..$SUBNET.$n (switch namespace $SW)"
}

cmd_up() {
  local n=${1:-}
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] || usage_error "up N: N must be 1..250, got '${n}'"
  need_tools
  cmd_gc
  with_lock "$NAME" do_up "$n"
}

do_down() {
  if [ ! -d "$STATE" ] && [ -z "$(instance_netns "$NAME")" ]; then return 0; fi
  teardown "$NAME"
  log "down"
}

cmd_down() {
  need_tools
  with_lock "$NAME" do_down
  rm -f "$STATE_ROOT/$NAME.lock"
  rmdir "$STATE_ROOT" 2>/dev/null || true
}

# ---- shaping ---------------------------------------------------------------------------------

rate_bps() {  # 1gbit | 500mbit | 64kbit | 100000bit -> bits per second
  case "$1" in
    *gbit) [[ ${1%gbit} =~ ^[0-9]+$ ]] && echo $((${1%gbit} * 1000000000)) ;;
    *mbit) [[ ${1%mbit} =~ ^[0-9]+$ ]] && echo $((${1%mbit} * 1000000)) ;;
    *kbit) [[ ${1%kbit} =~ ^[0-9]+$ ]] && echo $((${1%kbit} * 1000)) ;;
    *bit) [[ ${1%bit} =~ ^[0-9]+$ ]] && echo "${1%bit}" ;;
  esac
}

# tbf on device $2 of namespace $1 at rate $3 (or none).
set_tbf() {
  local ns=$1 dev=$2 rate=$3 bps burst
  tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
  [ "$rate" != none ] || return 0
  bps=$(rate_bps "$rate")
  # Bucket: 1 ms of the rate, at least 128 KiB. A bucket under the veth's 64 KiB GSO packets makes
  # tbf cut them into MTU-sized ones (5% more bytes on the wire, and below the rate on a loaded
  # machine); a larger one lets that many bytes pass at full speed after an idle moment.
  # Measured: docs/cluster.md, "Shaping".
  burst=$((bps / 8 / 1000)); [ "$burst" -ge 131072 ] || burst=131072
  tc -n "$ns" qdisc add dev "$dev" root tbf rate "$rate" burst "${MDDP_CLUSTER_TBF_BURST:-$burst}" \
    latency "${MDDP_CLUSTER_TBF_LATENCY:-20ms}"
}

cmd_shape() {
  local rate=${1:-} i
  [ -n "$rate" ] || usage_error "shape RATE [HOST...]"
  shift
  [ "$rate" = none ] || [ -n "$(rate_bps "$rate")" ] || usage_error "shape: RATE like 10gbit, 500mbit, 64kbit or none, got '$rate'"
  need_tools
  [ -f "$STATE/complete" ] || die "instance '$NAME' is not up"
  local idx=()
  if [ $# -eq 0 ]; then mapfile -t idx < <(seq 1 "$(nhosts)"); else for h in "$@"; do idx+=("$(host_index "$h")"); done; fi
  for i in "${idx[@]}"; do
    set_tbf "$(host_name "$i")" eth0 "$rate"  # host -> switch (what the host sends)
    set_tbf "$SW" "p$i" "$rate"               # switch -> host (what the host receives)
    echo "$rate" >"$STATE/rate.$(host_name "$i")"
  done
  log "shaped: $rate on $(for i in "${idx[@]}"; do printf 'h%s ' "$i"; done)"
}

# ---- running things on hosts -----------------------------------------------------------------

host_is_failed() { [ -e "$STATE/failed.$(host_name "$1")" ]; }

# enter I CMD...: exec CMD on host I. `nsenter --net` keeps this machine's /sys and mounts (unlike
# `ip netns exec`, which remounts /sys); `unshare` gives the command a UTS namespace (its own
# hostname, which Open MPI and Slurm use to tell nodes apart) and a private mount namespace in
# which the cluster's /etc/hosts is bound over the machine's.
enter() {
  local i=$1 h; shift
  h=$(host_name "$i")
  [ -e "/run/netns/$h" ] || die "host $h has no network namespace (is instance '$NAME' up?)"
  exec nsenter --net="/run/netns/$h" -- unshare --uts --mount --propagation private -- \
    sh -c 'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"' \
    sh "$STATE/etc_hosts" "$h" env MDDP_CLUSTER_HOST="$h" "$@"
}

cmd_exec() {
  [ $# -ge 2 ] || usage_error "exec HOST CMD..."
  local i; i=$(host_index "$1"); shift
  host_is_failed "$i" && die "host $(host_name "$i") is failed (cluster.sh recover $(host_name "$i"))"
  enter "$i" "$@"
}

# What Open MPI's rsh launcher calls: AGENT [ssh options] HOST WORD... (one remote command line).
cmd_agent() {
  while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
  [ $# -ge 2 ] || usage_error "agent HOST CMD..."
  local i; i=$(host_index "$1"); shift
  if host_is_failed "$i"; then
    echo "cluster.sh agent: connect to host $(host_name "$i"): No route to host (failed)" >&2
    exit 255
  fi
  enter "$i" sh -c "$*"
}

write_hostfile() {  # write_hostfile SLOTS FILE: the hosts that are up, atomically
  local slots=$1 file=$2 i
  [[ $slots =~ ^[1-9][0-9]*$ ]] || usage_error "slots must be a positive integer, got '$slots'"
  for i in $(seq 1 "$(nhosts)"); do host_is_failed "$i" || echo "$(host_name "$i") slots=$slots"; done >"$file.$$"
  mv "$file.$$" "$file"
}

cmd_hostfile() {
  [ -f "$STATE/complete" ] || die "instance '$NAME' is not up"
  local f; f=$(mktemp)
  write_hostfile "${1:-1}" "$f"; cat "$f"; rm -f "$f"
}

first_up_host() {
  local i
  for i in $(seq 1 "$(nhosts)"); do host_is_failed "$i" || { echo "$i"; return 0; }; done
  die "every host of instance '$NAME' is failed"
}

cmd_run() {
  [ $# -ge 1 ] || usage_error "run CMD..."
  [ -f "$STATE/complete" ] || die "instance '$NAME' is not up"
  local slots=${MDDP_CLUSTER_SLOTS:-1}
  write_hostfile "$slots" "$STATE/hostfile.$slots"
  export MDDP_CLUSTER_HOSTFILE=$STATE/hostfile.$slots
  # Open MPI for this cluster (launcher configuration, not the program's):
  #  * reach other hosts through our agent, as mpirun would through ssh;
  #  * MPI and bootstrap (oob) traffic on the hosts' subnet: inside a host only eth0 and lo exist,
  #    but naming the subnet keeps that true if a host ever gets another interface;
  #  * self, vader (shared memory inside a host) and tcp only: no probing of absent fabrics;
  #  * no core binding: every host has the same cores, so each host's local rank 0 would be bound
  #    to core 0;
  #  * yield while waiting: all hosts share this machine's cores, and ranks that busy-poll starve
  #    the kernel's softirq work that moves packets through the veths (measured: a 40-step train
  #    at 2 hosts x 2 ranks took 11.7 s polling, 2.2 s yielding; docs/cluster.md);
  #  * namespaces need root, so everything in the cluster runs as root.
  export OMPI_MCA_plm_rsh_agent="$SELF agent"
  export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
  export OMPI_MCA_btl_tcp_if_include=$SUBNET.0/24 OMPI_MCA_oob_tcp_if_include=$SUBNET.0/24
  export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
  export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # The agent, run by Open MPI on any host, must find this instance.
  export MDDP_CLUSTER=$NAME MDDP_CLUSTER_SUBNET=$SUBNET MDDP_CLUSTER_STATE=$STATE_ROOT
  enter "$(first_up_host)" "$@"
}

cmd_mpirun() {
  if [ "${1:-}" = --slots ]; then
    [ $# -ge 2 ] || usage_error "mpirun --slots S ARGS..."
    export MDDP_CLUSTER_SLOTS=$2; shift 2
  fi
  local slots=${MDDP_CLUSTER_SLOTS:-1}
  cmd_run mpirun --hostfile "$STATE/hostfile.$slots" "$@"
}

# ---- failures --------------------------------------------------------------------------------

cmd_fail() {
  [ $# -eq 1 ] || usage_error "fail HOST"
  need_tools
  local i h; i=$(host_index "$1"); h=$(host_name "$i")
  # Processes first, then the link: the dead processes' connections close (peers see a reset, as
  # after a crashed daemon) and nothing reaches the host afterwards.
  touch "$STATE/failed.$h"
  kill_netns_pids "$h"
  ip -n "$h" link set eth0 down
  log "failed: $h (processes killed, link down)"
}

cmd_recover() {
  [ $# -eq 1 ] || usage_error "recover HOST"
  need_tools
  local i h; i=$(host_index "$1"); h=$(host_name "$i")
  ip -n "$h" link set eth0 up
  rm -f "$STATE/failed.$h"
  log "recovered: $h"
}

# ---- inspection ------------------------------------------------------------------------------

cmd_status() {
  local n i h state rate
  n=$(nhosts)
  [ -f "$STATE/complete" ] || { echo "instance '$NAME': down"; return 1; }
  echo "instance '$NAME': $n hosts, subnet $SUBNET.0/24$(owner_line "$STATE")"
  for i in $(seq 1 "$n"); do
    h=$(host_name "$i")
    state=up; host_is_failed "$i" && state=failed
    rate=$(cat "$STATE/rate.$h" 2>/dev/null || echo none)
    printf '%s  %s  %-6s rate %-8s processes %s  qdisc: %s\n' "$h" "$SUBNET.$i" "$state" "$rate" \
      "$(ip netns pids "$h" 2>/dev/null | wc -l)" "$(tc -n "$h" qdisc show dev eth0 | head -1)"
  done
}

owner_line() {
  local pid; pid=$(sed -n 's/^OWNER_PID=//p' "$1/config" 2>/dev/null)
  [ -n "$pid" ] || return 0
  if owner_gone "$1"; then echo ", owner pid $pid (exited: stale)"; else echo ", owner pid $pid"; fi
}

cmd_hosts() {
  local i
  [ -f "$STATE/complete" ] || die "instance '$NAME' is not up"
  for i in $(seq 1 "$(nhosts)"); do
    echo "$(host_name "$i") $SUBNET.$i $(host_is_failed "$i" && echo failed || echo up)"
  done
}

cmd_list() {
  local d
  for d in "$STATE_ROOT"/*/; do
    [ -d "$d" ] || continue
    echo "$(basename "$d"): $(sed -n 's/^N=//p' "$d/config" 2>/dev/null) hosts$( [ -f "$d/complete" ] || echo ' (incomplete)')$(owner_line "$d")"
  done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  shape) cmd_shape "$@" ;;
  status) cmd_status ;;
  exec) cmd_exec "$@" ;;
  run) cmd_run "$@" ;;
  mpirun) cmd_mpirun "$@" ;;
  hostfile) cmd_hostfile "$@" ;;
  fail) cmd_fail "$@" ;;
  recover) cmd_recover "$@" ;;
  agent) cmd_agent "$@" ;;
  hosts) cmd_hosts ;;
  list) cmd_list ;;
  gc) need_tools; cmd_gc ;;
  *) usage_error "unknown command '${cmd}'" ;;
esac
