#!/bin/bash
# cluster_lib.sh — sourced by the `cluster` tests (tests/cluster/*.sh, tests/slurm/slurm_e2e.sh):
# skip cleanly where the emulated cluster cannot run, give each test run instances of its own, and
# remove them on every exit path.
#
#   cluster_test_begin TAG
#     Exits 77 (ctest: skipped) with the reason on stdout unless this process can build the
#     cluster: root, iproute2 (ip, tc), util-linux (nsenter, unshare, flock), and a named network
#     namespace that accepts a veth pair and a tbf qdisc (an unprivileged container, or a kernel
#     without sch_tbf, fails here). Sets CLUSTER (path of cluster.sh) and WORK (a fresh temporary
#     directory), exports MDDP_CLUSTER=TAG-<pid> (this run's instance) and MDDP_CLUSTER_OWNER=<this
#     shell's pid>, and traps EXIT, INT, TERM and HUP: every instance named by cluster_track is torn
#     down and WORK is removed, whatever the exit path. SIGKILL cannot be trapped (ctest's timeout kill): then the
#     recorded owner is gone, and the next `cluster.sh up` or `gc` anywhere removes the instance.
#   cluster_measure_begin TAG SCRIPT MICRODDP OUTDIR
#     For the measure_*.sh scripts: cluster_test_begin TAG, then sets bin (MICRODDP, absolute), out
#     (OUTDIR, created, absolute) and C (cluster.sh), and exports MDDP_CLUSTER_TBF_BURST [1mb: a
#     loaded machine needs it, docs/cluster.md]. A missing argument is a usage error naming SCRIPT.
#   cluster_measure_provenance LINKS
#     Writes what a measurement ran on (date, kernel, cores, load, Open MPI, commit, LINKS, tbf burst)
#     to $out/provenance.txt and stdout.
#   measure_run CMD...   prints "+ CMD" to stderr, then runs it
#   cluster_track NAME   also tear down instance NAME at exit (for tests that make more than one)
#   cluster_on_exit CMD...  run CMD at exit, before the instances are torn down (e.g. stop daemons,
#                        print logs); CLUSTER_EXIT_RC holds the exit code meanwhile
#   cluster_leftovers NAME
#     prints what instance NAME left behind (namespaces, state, processes started inside its
#     hosts); prints nothing when it is completely gone
set -euo pipefail

CLUSTER=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cluster.sh
_cluster_instances=()
_cluster_hooks=()

cluster_skip() { echo "SKIP: $*"; exit 77; }

cluster_require() {
  local t
  [ "$(id -u)" = 0 ] || cluster_skip "the emulated cluster needs root (network namespaces, tc)"
  for t in ip tc nsenter unshare flock; do
    command -v "$t" >/dev/null || cluster_skip "'$t' is not installed (iproute2, util-linux: ./setup.sh deps)"
  done
  ip netns list >/dev/null 2>&1 || cluster_skip "'ip netns' does not work here"
}

# What `up` does, once, in a namespace named like the instance's switch (so that, were we killed
# right here, the next `up` of this instance would remove it): a named namespace (mounts under
# /run/netns: refused in an unprivileged container), a veth pair, a tbf qdisc (sch_tbf).
cluster_probe_namespaces() {
  local ns=$MDDP_CLUSTER-sw err
  if ! err=$( { ip netns add "$ns" && ip -n "$ns" link add mddp0 type veth peer name mddp1 &&
                tc -n "$ns" qdisc add dev mddp0 root tbf rate 1mbit burst 32k latency 10ms; } 2>&1); then
    ip netns del "$ns" 2>/dev/null || true
    cluster_skip "cannot make a named network namespace with a veth pair and a tbf qdisc here: $err"
  fi
  ip netns del "$ns"
}

cluster_track() { _cluster_instances+=("$1"); }
cluster_on_exit() { _cluster_hooks+=("$*"); }

_cluster_cleanup() {
  local rc=$? n h
  trap - EXIT INT TERM HUP
  CLUSTER_EXIT_RC=$rc  # read by the hooks
  export CLUSTER_EXIT_RC
  for h in "${_cluster_hooks[@]}"; do eval "$h" || true; done
  for n in "${_cluster_instances[@]}"; do MDDP_CLUSTER=$n "$CLUSTER" down 2>/dev/null || true; done
  [ -z "${WORK:-}" ] || rm -rf "$WORK"
  exit "$rc"
}

cluster_measure_begin() {
  local tag=$1 script=$2
  [ $# -ge 4 ] || { echo "usage: $script MICRODDP OUTDIR" >&2; exit 2; }
  bin=$(readlink -f "$3")
  mkdir -p "$4"
  out=$(readlink -f "$4")
  cluster_test_begin "$tag"
  C=$CLUSTER
  export MDDP_CLUSTER_TBF_BURST=${MDDP_CLUSTER_TBF_BURST:-1mb}
}

cluster_measure_provenance() {
  {
    echo "# $(date -Is) $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(mpirun --version | head -1)"
    echo "# commit $(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short HEAD 2>/dev/null || echo unknown); links $1, tbf burst $MDDP_CLUSTER_TBF_BURST"
  } | tee "$out/provenance.txt"
}

measure_run() {
  echo "+ $*" >&2
  "$@"
}

cluster_test_begin() {
  cluster_require
  export MDDP_CLUSTER="$1-$$" MDDP_CLUSTER_OWNER=$$
  WORK=$(mktemp -d "/tmp/mddp-cluster-$1.XXXXXX")
  cluster_track "$MDDP_CLUSTER"
  trap _cluster_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  cluster_probe_namespaces
}

cluster_leftovers() {
  local name=$1 p
  ip netns list | awk '{print $1}' | grep -E "^$name-(h[0-9]+|sw)\$" | sed 's/^/namespace /' || true
  [ ! -e "${MDDP_CLUSTER_STATE:-/run/mddp-cluster}/$name" ] || echo "state ${MDDP_CLUSTER_STATE:-/run/mddp-cluster}/$name"
  [ ! -e "/etc/netns/$name-h1" ] || echo "/etc/netns/$name-h1"
  # Everything started on a host carries MDDP_CLUSTER_HOST=<its name> (cluster.sh's enter).
  for p in /proc/[0-9]*; do
    if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -Eq "^MDDP_CLUSTER_HOST=$name-h[0-9]+\$"; then
      echo "process ${p#/proc/} ($(cat "$p/comm" 2>/dev/null))"
    fi
  done
}
