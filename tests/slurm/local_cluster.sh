#!/bin/bash
# local_cluster.sh — a throw-away Slurm cluster on this machine for the `slurm` tests.
#
#   local_cluster.sh up DIR NODES     munged + slurmctld + NODES slurmd ("node1".."nodeN") with all
#                                     state, config and logs under DIR; prints `export SLURM_CONF=...`
#   local_cluster.sh down DIR         cancel jobs, stop every daemon it started (by recorded PID)
#   local_cluster.sh wait DIR JOBID TIMEOUT_S
#                                     poll until the job ends; print "JOBID STATE EXIT"; exit 0 iff
#                                     COMPLETED
#
# Needs root and Debian's slurm-wlm + munge (setup.sh installs them); no systemd, no cgroups.
# Design notes (what makes a one-host cluster work):
#   * each slurmd runs in its own UTS namespace with hostname = node name, so processes on the two
#     fake nodes see different hostnames and Open MPI treats them as distinct hosts (otherwise the
#     ranks of both "nodes" share shared-memory segment names and collide);
#   * a per-node TmpFS and spool directory (%n), because the pmix plugin puts per-step directories
#     there and two nodes sharing one directory collide;
#   * proctrack/linuxproc + task/none (no cgroup plugins without systemd), config_overrides so the
#     declared CPUs may exceed the real ones (both nodes share the same 2 cores);
#   * a TaskProlog exports the Open MPI run-as-root variables and binding=none into every task, so
#     the shipped job scripts carry no test-only flags;
#   * a random free port and SLURM_CONF (never /etc/slurm) so parallel test runs do not meet.
set -euo pipefail

log() { printf '[local_cluster] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

alive() {  # a PID that exists and is not a zombie
  local st
  [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || return 1
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ "$st" != Z ] && [ "$st" != X ]
}

stop_pid() {  # SIGTERM, up to 10 s, then SIGKILL
  local pid=$1 i
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 100); do alive "$pid" || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

free_port() {  # two consecutive free ports region: PORT for slurmctld, PORT+i for node i
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 30000))
    if ! ss -ltn 2>/dev/null | awk '{print $4}' | grep -Eq ":($p|$((p + 1))|$((p + 2))|$((p + 3))|$((p + 4)))\$"; then
      echo "$p"; return 0
    fi
  done
  die "no free port found"
}

cmd_up() {
  local dir=$1 nodes=$2 cpus port i name mem
  [ "$(id -u)" = 0 ] || die "needs root (slurmd as root, munged as munge)"
  for b in munged slurmctld slurmd sbatch; do command -v "$b" >/dev/null || die "$b not installed (./setup.sh deps)"; done
  mkdir -p "$dir"/{etc,log,run,state/ctld}
  chmod 0755 "$dir"
  cpus=$(nproc); port=$(free_port)
  mem=$(awk '/^MemTotal:/ {print int($2 / 1024 / 4)}' /proc/meminfo)
  # munge: key owned by munge, 0400; socket directory 0711 so clients can reach it.
  install -d -o munge -g munge -m 0711 "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$dir/munge/munge.key"; chmod 0400 "$dir/munge/munge.key"
  runuser -u munge -- /usr/sbin/munged --socket="$dir/munge/sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" \
    || die "munged failed: $(tail -3 "$dir/munge/munged.log" 2>/dev/null)"
  for i in $(seq 100); do [ -S "$dir/munge/sock" ] && [ -s "$dir/munge/munged.pid" ] && break; sleep 0.05; done
  cp "$dir/munge/munged.pid" "$dir/run/munged.pid"
  cat >"$dir/etc/slurm.conf" <<CONF
# written by tests/slurm/local_cluster.sh (throw-away test cluster)
ClusterName=mddptest
SlurmctldHost=localhost
SlurmctldPort=$port
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
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=pmix
ReturnToService=2
MailProg=/bin/true
KillWait=5
InactiveLimit=0
SchedulerParameters=batch_sched_delay=0
MinJobAge=300
TaskProlog=$dir/etc/task_prolog.sh
CONF
  for i in $(seq 1 "$nodes"); do
    echo "NodeName=node$i NodeHostname=node$i NodeAddr=127.0.0.1 Port=$((port + i)) CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$mem State=UNKNOWN" >>"$dir/etc/slurm.conf"
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
  export SLURM_CONF=$dir/etc/slurm.conf
  slurmctld -f "$SLURM_CONF" || die "slurmctld failed: $(tail -5 "$dir/log/slurmctld.log" 2>/dev/null)"
  for i in $(seq 100); do [ -s "$dir/run/slurmctld.pid" ] && break; sleep 0.05; done
  for i in $(seq 1 "$nodes"); do
    name=node$i
    mkdir -p "$dir/state/spool/$name" "$dir/state/tmp/$name"
    unshare --uts sh -c "hostname '$name' && exec slurmd -f '$SLURM_CONF' -N '$name'" \
      || die "slurmd $name failed: $(tail -5 "$dir/log/slurmd-$name.log" 2>/dev/null)"
  done
  for i in $(seq 300); do
    [ "$(sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle' || true)" -ge "$nodes" ] && { echo "export SLURM_CONF=$SLURM_CONF"; return 0; }
    sleep 0.1
  done
  sinfo -N -l >&2 || true
  die "nodes not idle after 30 s (logs in $dir/log)"
}

cmd_down() {
  local dir=$1 f pid uts p
  [ -d "$dir" ] || return 0
  export SLURM_CONF=$dir/etc/slurm.conf
  if [ -s "$dir/run/slurmctld.pid" ] && alive "$(cat "$dir/run/slurmctld.pid")"; then
    scancel --quiet --full $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
  fi
  for f in "$dir"/run/slurmd-*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    alive "$pid" || continue
    uts=$(readlink "/proc/$pid/ns/uts" 2>/dev/null || true)
    stop_pid "$pid"
    # what is left of that node (slurmstepd, tasks) lives in its UTS namespace: only those PIDs
    if [ -n "$uts" ] && [ "$uts" != "$(readlink /proc/1/ns/uts)" ]; then
      for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/uts" 2>/dev/null)" = "$uts" ] && kill -KILL "${p#/proc/}" 2>/dev/null || true
      done
    fi
  done
  [ -s "$dir/run/slurmctld.pid" ] && stop_pid "$(cat "$dir/run/slurmctld.pid")"
  [ -s "$dir/run/munged.pid" ] && stop_pid "$(cat "$dir/run/munged.pid")"
  return 0
}

cmd_wait() {
  local dir=$1 job=$2 timeout=$3 t0=$SECONDS line state ec
  export SLURM_CONF=$dir/etc/slurm.conf
  while :; do
    line=$(scontrol -o show job "$job" 2>/dev/null) || { echo "$job UNKNOWN"; return 2; }
    state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$line")
    case "$state" in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE)
        ec=$(sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' <<<"$line")
        echo "$job $state $ec"
        [ "$state" = COMPLETED ]; return ;;
    esac
    if [ $((SECONDS - t0)) -ge "$timeout" ]; then
      echo "$job $state TIMEOUT-WAITING after ${timeout}s"; scancel "$job" 2>/dev/null || true; return 124
    fi
    sleep 0.2
  done
}

case "${1:-}" in
  up) cmd_up "$2" "${3:-2}" ;;
  down) cmd_down "$2" ;;
  wait) cmd_wait "$2" "$3" "${4:-120}" ;;
  *) echo "usage: $0 up DIR NODES | down DIR | wait DIR JOBID TIMEOUT_S" >&2; exit 2 ;;
esac
