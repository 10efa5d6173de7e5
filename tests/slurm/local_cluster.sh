#!/bin/bash
# local_cluster.sh — a throw-away Slurm cluster on this machine for the `slurm` tests, whose nodes
# are the hosts of the emulated cluster (tests/cluster/cluster.sh): every node has its own network
# namespace and hostname, so srun's traffic (PMIx, MPI between nodes) crosses the emulated links.
#
#   local_cluster.sh up DIR NODES     brings up NODES emulated hosts (instance $MDDP_CLUSTER, owner
#                                     $MDDP_CLUSTER_OWNER, as cluster.sh), then munged and
#                                     slurmctld on the first host and one slurmd on every host;
#                                     state, config and logs under DIR; prints `export SLURM_CONF=...`
#   local_cluster.sh client DIR CMD...  runs a Slurm client (sbatch, srun, squeue, ...) on the first
#                                     host, the only place that reaches slurmctld (no route leaves
#                                     the emulated network)
#   local_cluster.sh down DIR         cancels the jobs, stops the daemons (by recorded PID), and
#                                     tears the emulated hosts down (which also ends every
#                                     slurmstepd and task left on them)
#   local_cluster.sh wait DIR JOBID TIMEOUT_S
#                                     polls until the job ends; prints "JOBID STATE EXIT"; exit 0
#                                     iff COMPLETED
#
# Needs root, Debian's slurm-wlm + munge (setup.sh installs them) and what cluster.sh needs; no
# systemd, no cgroups. Design notes (what makes a one-machine cluster work):
#   * each node is an emulated host: its slurmd, slurmstepds and tasks see the node's hostname and
#     only its network, so Open MPI treats the nodes as distinct hosts (otherwise the ranks of two
#     "nodes" share shared-memory segment names and collide) and talks TCP between them;
#   * slurmctld and munged run on the first host too, so tearing the hosts down ends every process
#     the cluster started, even after a SIGKILLed test; munge's socket is a file, which every host
#     reaches whatever its network namespace;
#   * a per-node TmpFS and spool directory (%n), because the pmix plugin puts per-step directories
#     there and two nodes sharing one directory collide;
#   * proctrack/linuxproc + task/affinity (no cgroup plugins without systemd; affinity needs none),
#     config_overrides so the declared CPUs may exceed the real ones (all nodes share the same
#     cores). Tasks are bound only when a job asks (--cpu-bind): the CPUs-per-task test does, to
#     see that srun gave each task the CPUs the job asked for;
#   * a TaskProlog exports the Open MPI run-as-root variables and binding=none into every task, so
#     the shipped job scripts carry no test-only flags;
#   * SLURM_CONF under DIR (never /etc/slurm), and Slurm's default ports: every host has a port
#     space of its own, so parallel test runs (other instances) do not meet.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=$here/../cluster/cluster.sh

log() { printf '[local_cluster] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

alive() {  # a PID that exists and is not a zombie
  local st
  [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || return 1
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ "$st" != Z ] && [ "$st" != X ]
}

stop_pid() {  # SIGTERM, up to 10 s, then SIGKILL
  local pid=$1
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do alive "$pid" || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

# The cluster.sh instance of DIR (recorded by `up`, so every later command uses the same one).
use_instance() {
  [ -s "$1/run/instance" ] || die "$1 holds no cluster started by 'local_cluster.sh up'"
  export MDDP_CLUSTER; MDDP_CLUSTER=$(cat "$1/run/instance")
  export SLURM_CONF=$1/etc/slurm.conf
}

on_head() { "$CLUSTER" exec h1 "$@"; }  # run on the first host (slurmctld's)

cmd_up() {
  local dir=$1 nodes=$2 cpus mem name addr head
  [ "$(id -u)" = 0 ] || die "needs root (slurmd as root, munged as munge, network namespaces)"
  for b in munged slurmctld slurmd sbatch; do command -v "$b" >/dev/null || die "$b not installed (./setup.sh deps)"; done
  mkdir -p "$dir"/{etc,log,run,state/ctld}
  chmod 0755 "$dir"
  "$CLUSTER" up "$nodes"
  echo "${MDDP_CLUSTER:-mddp}" >"$dir/run/instance"
  use_instance "$dir"
  mapfile -t hosts < <("$CLUSTER" hosts)
  read -r head addr _ <<<"${hosts[0]}"
  cpus=$(nproc)
  mem=$(awk '/^MemTotal:/ {print int($2 / 1024 / 4)}' /proc/meminfo)
  # munge: key owned by munge, 0400; socket directory 0711 so clients can reach it.
  install -d -o munge -g munge -m 0711 "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$dir/munge/munge.key"; chmod 0400 "$dir/munge/munge.key"
  on_head runuser -u munge -- /usr/sbin/munged --socket="$dir/munge/sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" \
    || die "munged failed: $(tail -3 "$dir/munge/munged.log" 2>/dev/null)"
  for _ in $(seq 100); do [ -S "$dir/munge/sock" ] && [ -s "$dir/munge/munged.pid" ] && break; sleep 0.05; done
  cp "$dir/munge/munged.pid" "$dir/run/munged.pid"
  cat >"$dir/etc/slurm.conf" <<CONF
# written by tests/slurm/local_cluster.sh (throw-away test cluster on emulated hosts)
ClusterName=mddptest
SlurmctldHost=$head($addr)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/sock
StateSaveLocation=$dir/state/ctld
SlurmdSpoolDir=$dir/state/spool/%n
TmpFS=$dir/state/tmp/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=pmix
ReturnToService=2
MailProg=/bin/true
KillWait=5
# Declare a silent node DOWN after 5 s (Slurm default 300 s): srun ends a step that had tasks on a
# crashed node only then, and the elastic test crashes one.
SlurmdTimeout=5
MessageTimeout=5
InactiveLimit=0
SchedulerParameters=batch_sched_delay=0
MinJobAge=300
TaskProlog=$dir/etc/task_prolog.sh
CONF
  for h in "${hosts[@]}"; do
    read -r name addr _ <<<"$h"
    echo "NodeName=$name NodeHostname=$name NodeAddr=$addr CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$mem State=UNKNOWN" >>"$dir/etc/slurm.conf"
  done
  echo "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$dir/etc/slurm.conf"
  cat >"$dir/etc/task_prolog.sh" <<'PROLOG'
#!/bin/sh
# every task: Open MPI may run as root here; fake nodes share cores, so never bind
echo "export OMPI_ALLOW_RUN_AS_ROOT=1"
echo "export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
echo "export OMPI_MCA_hwloc_base_binding_policy=none"
echo "export OMPI_MCA_rmaps_base_oversubscribe=1"
PROLOG
  chmod 0755 "$dir/etc/task_prolog.sh"
  on_head slurmctld -f "$SLURM_CONF" || die "slurmctld failed: $(tail -5 "$dir/log/slurmctld.log" 2>/dev/null)"
  for _ in $(seq 100); do [ -s "$dir/run/slurmctld.pid" ] && break; sleep 0.05; done
  for h in "${hosts[@]}"; do
    read -r name _ <<<"$h"
    mkdir -p "$dir/state/spool/$name" "$dir/state/tmp/$name"
    "$CLUSTER" exec "$name" slurmd -f "$SLURM_CONF" -N "$name" \
      || die "slurmd $name failed: $(tail -5 "$dir/log/slurmd-$name.log" 2>/dev/null)"
  done
  for _ in $(seq 300); do
    [ "$(on_head sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle' || true)" -ge "$nodes" ] && { echo "export SLURM_CONF=$SLURM_CONF"; return 0; }
    sleep 0.1
  done
  on_head sinfo -N -l >&2 || true
  die "nodes not idle after 30 s (logs in $dir/log)"
}

cmd_down() {
  local dir=$1 f jobs
  [ -s "$dir/run/instance" ] || return 0
  use_instance "$dir"
  if [ -s "$dir/run/slurmctld.pid" ] && alive "$(cat "$dir/run/slurmctld.pid")"; then
    jobs=$(on_head squeue -h -o %i 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$jobs" ] || on_head scancel --quiet --full $jobs 2>/dev/null || true
  fi
  for f in "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid"; do
    [ -s "$f" ] && stop_pid "$(cat "$f")"
  done
  # Whatever is still on the nodes (a slurmstepd, a task) ends with the hosts.
  "$CLUSTER" down
  rm -f "$dir/run/instance"
}

cmd_wait() {
  local dir=$1 job=$2 timeout=$3 t0=$SECONDS line state ec
  use_instance "$dir"
  while :; do
    line=$(on_head scontrol -o show job "$job" 2>/dev/null) || { echo "$job UNKNOWN"; return 2; }
    state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$line")
    case "$state" in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE)
        ec=$(sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' <<<"$line")
        echo "$job $state $ec"
        [ "$state" = COMPLETED ]; return ;;
    esac
    if [ $((SECONDS - t0)) -ge "$timeout" ]; then
      echo "$job $state TIMEOUT-WAITING after ${timeout}s"; on_head scancel "$job" 2>/dev/null || true; return 124
    fi
    sleep 0.2
  done
}

cmd_client() {
  local dir=$1; shift
  use_instance "$dir"
  on_head "$@"
}

case "${1:-}" in
  up) [ $# -ge 2 ] || die "usage: $0 up DIR NODES"; cmd_up "$2" "${3:-2}" ;;
  down) [ $# -eq 2 ] || die "usage: $0 down DIR"; cmd_down "$2" ;;
  wait) [ $# -ge 3 ] || die "usage: $0 wait DIR JOBID [TIMEOUT_S]"; cmd_wait "$2" "$3" "${4:-120}" ;;
  client) [ $# -ge 3 ] || die "usage: $0 client DIR CMD..."; shift; cmd_client "$@" ;;
  *) echo "usage: $0 up DIR NODES | down DIR | wait DIR JOBID TIMEOUT_S | client DIR CMD..." >&2; exit 2 ;;
esac
