#!/bin/bash
# elastic_run.sh — keep training going when a rank or a host dies: what torchrun's elastic agent
# does, for microddp. Every attempt runs `microddp train --checkpoint-every N --checkpoint-dir DIR
# --resume auto`; when an attempt fails, the hosts are probed, and training restarts on the hosts
# that still answer (fewer ranks when a host is gone), from the newest checkpoint: checkpoints load
# at any world size. At most --max-restarts restarts.
#
# Usage: jobs/elastic_run.sh [OPTIONS] [-- TRAIN_OPTIONS...]
#   Inside a Slurm allocation (SLURM_JOB_ID set; LAUNCHER=srun): the allocation's nodes, started
#   with srun. Submit with `sbatch --no-kill` (jobs/train_elastic.sbatch), or Slurm ends the whole
#   job when a node fails.
#   Elsewhere (LAUNCHER=mpirun): the hosts of --hostfile, started with mpirun through its launcher
#   agent (ssh; on the emulated cluster tests/cluster/cluster.sh's agent).
#
# Options:
#   --max-restarts K      restarts after failed attempts before giving up        [3]
#   --min-hosts M         give up when fewer than M hosts answer                  [1]
#   --ranks-per-host R    ranks on every host [mpirun: each host's slots= in the hostfile;
#                         srun: SLURM_NTASKS_PER_NODE, else SLURM_NTASKS / nodes]
#   --hostfile FILE       (mpirun) Open MPI hostfile of the hosts to start on ("HOST slots=R")
#   --checkpoint-dir DIR  checkpoints, shared by every host        [$RESULTS_DIR/checkpoints]
#   --checkpoint-every N  steps between checkpoints                               [100]
#   --probe-timeout S     a host that has not answered the probe after S seconds is lost [15]
#   TRAIN_OPTIONS         any `microddp train` options but --resume/--checkpoint-dir/--checkpoint-every
# Environment: MICRODDP_BIN, RESULTS_DIR, LAUNCHER, MPIRUN_FLAGS, SRUN_FLAGS (jobs/lib/common.sh), and
#   ELASTIC_PROBE   command that exits 0 when host $1 can run ranks [srun: `srun -N1 -n1 -w HOST true`;
#                   mpirun: `$OMPI_MCA_plm_rsh_agent HOST true`, else `ssh -o BatchMode=yes HOST true`]
#   ELASTIC_LAUNCHER_GRACE  seconds the launcher may outlive all of its local ranks before it is
#                   killed (Open MPI 4.1's mpiexec can hang after an abort, docs/reliability.md) [10]
#
# Output: the launcher's output, and lines starting with "# elastic:"; exactly one per restart:
#   # elastic: restart 1/3: attempt 1 failed (exit 1): rank 2 (mddp-h2) exited on signal 9;
#     lost host(s): mddp-h2; resuming from ckpt_0000000040.h5 on 1 host(s) mddp-h1: world size 4 -> 2
# Exit codes: 0 training finished; 75 train stopped after writing a checkpoint: on SIGTERM/SIGUSR1
#   to its ranks, or SIGTERM/SIGINT/SIGHUP to this script (passed on as SIGUSR1), requeue as train
#   itself; 2 bad usage (ours, or train's: a restart would not help); 1 restarts exhausted, fewer
#   than --min-hosts hosts left, or stopped by a signal without a checkpoint (exit other than 75).
set -euo pipefail
args=("$@")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
source "$here/lib/common.sh"

say() { echo "# elastic: $*"; }
usage_error() { echo "elastic_run.sh: error: $*" >&2; exit 2; }
posint() { [[ $2 =~ ^[0-9]+$ ]] || usage_error "$1 needs a non-negative integer, got '$2'"; }

max_restarts=3; min_hosts=1; ranks_per_host=""; hostfile=""; ckpt_dir=""; ckpt_every=100; probe_timeout=15
while [ $# -gt 0 ]; do
  case "$1" in
    --max-restarts) posint "$1" "${2-}"; max_restarts=$2; shift 2 ;;
    --min-hosts) posint "$1" "${2-}"; min_hosts=$2; shift 2 ;;
    --ranks-per-host) posint "$1" "${2-}"; ranks_per_host=$2; shift 2 ;;
    --hostfile) [ -r "${2-}" ] || usage_error "--hostfile '${2-}' is not a readable file"; hostfile=$2; shift 2 ;;
    --checkpoint-dir) [ -n "${2-}" ] || usage_error "--checkpoint-dir needs a directory"; ckpt_dir=$2; shift 2 ;;
    --checkpoint-every) posint "$1" "${2-}"; ckpt_every=$2; shift 2 ;;
    --probe-timeout) posint "$1" "${2-}"; probe_timeout=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown option '$1' (train's own options go after --)" ;;
  esac
done
train_args=("$@")
for a in "${train_args[@]}"; do
  case "$a" in
    --resume|--resume=*|--checkpoint-dir|--checkpoint-dir=*|--checkpoint-every|--checkpoint-every=*)
      usage_error "'$a' is elastic_run.sh's to set (every attempt resumes with --resume auto); give --checkpoint-dir/--checkpoint-every before --" ;;
  esac
done
[ "$min_hosts" -ge 1 ] || usage_error "--min-hosts must be at least 1"
[ "$ckpt_every" -ge 1 ] || usage_error "--checkpoint-every must be at least 1: restarts resume from checkpoints"
[ -z "$ranks_per_host" ] || [ "$ranks_per_host" -ge 1 ] || usage_error "--ranks-per-host must be at least 1"

mddp_init
ckpt_dir=${ckpt_dir:-$RESULTS_DIR/checkpoints}
mkdir -p "$ckpt_dir"

# ---- the hosts: hosts[i] runs slots[i] ranks ---------------------------------------------------
hosts=(); slots=()
if [ "$LAUNCHER" = srun ]; then
  [ -n "${SLURM_JOB_NODELIST:-}" ] || usage_error "LAUNCHER=srun outside a Slurm allocation (no SLURM_JOB_NODELIST)"
  mapfile -t hosts < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
  if [ -z "$ranks_per_host" ]; then
    ranks_per_host=${SLURM_NTASKS_PER_NODE%%[!0-9]*}
    [ -n "$ranks_per_host" ] || ranks_per_host=$(( ${SLURM_NTASKS:-${#hosts[@]}} / ${#hosts[@]} ))
    [ "$ranks_per_host" -ge 1 ] || ranks_per_host=1
  fi
  for _ in "${hosts[@]}"; do slots+=("$ranks_per_host"); done
else
  [ -n "$hostfile" ] || usage_error "--hostfile is required with mpirun (one 'HOST slots=R' line per host)"
  while read -r h rest; do
    [ -n "$h" ] && [ "${h#\#}" = "$h" ] || continue
    s=$(sed -n 's/.*slots=\([0-9]*\).*/\1/p' <<<"$rest")
    hosts+=("$h"); slots+=("${ranks_per_host:-${s:-1}}")
  done <"$hostfile"
  [ ${#hosts[@]} -gt 0 ] || usage_error "--hostfile $hostfile names no host"
fi

probe_host() {  # probe_host HOST: exit 0 iff the host can run a rank (within --probe-timeout)
  local h=$1
  if [ -n "${ELASTIC_PROBE:-}" ]; then
    # shellcheck disable=SC2086
    timeout -k 2 "$probe_timeout" $ELASTIC_PROBE "$h" </dev/null >/dev/null 2>&1
  elif [ "$LAUNCHER" = srun ]; then
    # shellcheck disable=SC2086
    timeout -k 2 "$probe_timeout" srun --nodes=1 --ntasks=1 --cpus-per-task="$(mddp_cpus_per_task)" --nodelist="$h" \
      ${SRUN_FLAGS:-} true </dev/null >/dev/null 2>&1
  elif [ -n "${OMPI_MCA_plm_rsh_agent:-}" ]; then
    # shellcheck disable=SC2086
    timeout -k 2 "$probe_timeout" $OMPI_MCA_plm_rsh_agent "$h" true </dev/null >/dev/null 2>&1
  else
    timeout -k 2 "$probe_timeout" ssh -o BatchMode=yes -o ConnectTimeout="$probe_timeout" "$h" true </dev/null >/dev/null 2>&1
  fi
}

world_size() { local s=0 x; for x in "${slots[@]}"; do s=$((s + x)); done; echo "$s"; }

# host_of_rank R: ranks fill each host's slots in order (mpirun --map-by slot, srun block).
host_of_rank() {
  local r=$1 i
  for i in "${!hosts[@]}"; do
    if [ "$r" -lt "${slots[$i]}" ]; then echo "${hosts[$i]}"; return; fi
    r=$((r - slots[i]))
  done
  echo "?"
}

# describe_failure LOG: what the launcher (and the ranks) said died, in one line.
describe_failure() {
  local log=$1 out=() r h s c
  # Open MPI: "mpirun noticed that process rank 2 with PID 123 on node h2 exited on signal 9 (Killed)."
  while read -r r h s; do out+=("rank $r ($h) exited on signal $s"); done < <(
    sed -n 's/.*process rank \([0-9]*\) with PID [0-9]* on node \([^ ]*\) exited on signal \([0-9]*\).*/\1 \2 \3/p' "$log" | sort -u)
  # Open MPI: "Process name: [[4711,1],2]" followed by "Exit code: 3"
  r=$(sed -n 's/.*Process name: *\[\[[0-9]*,[0-9]*\],\([0-9]*\)\].*/\1/p' "$log" | head -1)
  c=$(sed -n 's/.*Exit code: *\([0-9]*\).*/\1/p' "$log" | head -1)
  [ -z "$r" ] || out+=("rank $r ($(host_of_rank "$r")) exited with code ${c:-?}")
  # Open MPI: a rank whose TCP peer vanished ("Peer host: h2"), a daemon that was lost.
  while read -r h; do out+=("connection to $h lost"); done < <(sed -n 's/^ *Peer host: *\([^ ]*\).*/\1/p' "$log" | sort -u)
  while read -r h; do out+=("launcher daemon on $h lost"); done < <(
    sed -n 's/.*Remote daemon: .* on node \([^ ]*\).*/\1/p' "$log" | sort -u)
  grep -q "unable to reliably start one or more daemons" "$log" && out+=("a launcher daemon died")
  # srun: "srun: error: node2: task 2: Killed", "srun: error: node2: tasks 2-3: Exited with exit code 1"
  while IFS='|' read -r h r s; do out+=("$r ($h) $s"); done < <(
    sed -n 's/^srun: error: \([^:]*\): \(tasks\{0,1\} [0-9,-]*\): \(.*\)/\1|\2|\3/p' "$log" | sort -u)
  # microddp's own watchdog: "collective timeout on rank 0: ..."
  grep -Eq "collective timeout on rank|MPI section timeout on rank" "$log" && out+=("a collective timed out (--comm-timeout)")
  if [ ${#out[@]} -eq 0 ]; then echo "the launcher named no rank"; else (IFS=';'; echo "${out[*]}" | sed 's/;/; /g'); fi
}

# Open MPI 4.1's mpiexec sometimes hangs after an abort although every rank has exited
# (docs/reliability.md): once the launcher has had no live local rank for ELASTIC_LAUNCHER_GRACE
# seconds (after having had one), it is killed.
watch_launcher() {
  local launcher=$1 grace=${ELASTIC_LAUNCHER_GRACE:-10} comm seen=0 since=""
  comm=$(basename "$MICRODDP_BIN"); comm=${comm:0:15}
  while kill -0 "$launcher" 2>/dev/null; do
    if ps -eo pid=,ppid=,comm=,stat= | awk -v root="$launcher" -v want="$comm" '
         { parent[$1] = $2; name[$1] = $3; st[$1] = $4 }
         END { for (p in parent) { q = p; while (q in parent && q != root && q > 1) q = parent[q]
                                   if (q == root && name[p] == want && st[p] !~ /^Z/) found = 1 }
               exit !found }'; then
      seen=1; since=""
    elif [ "$seen" = 1 ]; then
      since=${since:-$SECONDS}
      if [ $((SECONDS - since)) -ge "$grace" ]; then
        say "every local rank has exited but the launcher has not after ${grace} s (Open MPI's hang after an abort): killing it"
        kill -KILL "$launcher" 2>/dev/null || true
        return 0
      fi
    fi
    sleep 1
  done
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mddp-elastic.XXXXXX")
launcher_pid=""; monitor_pid=""; tee_pid=""; stop_signal=""
cleanup() {
  local rc=$?
  for p in $monitor_pid $launcher_pid $tee_pid; do kill -TERM "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
# A signal to us (scancel, Ctrl-C) ends the run, no restart. The launcher gets SIGUSR1, which
# mpirun and srun pass on to every rank without ending the job: the ranks agree on a step, write
# a checkpoint and exit 75, and the launcher returns that 75. (mpirun given SIGTERM or SIGINT
# itself ends the job and returns 1 whatever the ranks did: docs/reliability.md, "Stopping a run".)
# A second signal ends the launcher at once with the signal itself.
on_signal() {
  if [ -z "$stop_signal" ]; then
    stop_signal=$1; [ -z "$launcher_pid" ] || kill -USR1 "$launcher_pid" 2>/dev/null || true
  else
    [ -z "$launcher_pid" ] || kill "-$1" "$launcher_pid" 2>/dev/null || true
  fi
}
trap 'on_signal TERM' TERM; trap 'on_signal INT' INT; trap 'on_signal HUP' HUP

# run_attempt N: one launch on the current hosts; output to the console and $tmp/attempt_N.log.
run_attempt() {
  local n=$1 world cmd=() list
  world=$(world_size)
  list=$(IFS=,; echo "${hosts[*]}")
  if [ "$LAUNCHER" = srun ]; then
    # --kill-on-bad-exit: one dead task ends the step (as mpirun does), so the attempt ends.
    # shellcheck disable=SC2206
    cmd=(srun --nodes="${#hosts[@]}" --ntasks="$world" --ntasks-per-node="${slots[0]}" --nodelist="$list"
         --cpus-per-task="$(mddp_cpus_per_task)" --distribution=block --kill-on-bad-exit=1 ${SRUN_FLAGS:-})
  else
    local root=(); [ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
    for i in "${!hosts[@]}"; do echo "${hosts[$i]} slots=${slots[$i]}"; done >"$tmp/hostfile.$n"
    # shellcheck disable=SC2206
    cmd=(mpirun "${root[@]}" ${MPIRUN_FLAGS:---oversubscribe --bind-to none} --hostfile "$tmp/hostfile.$n"
         --map-by slot -np "$world")
  fi
  cmd+=("$MICRODDP_BIN" train "${train_args[@]}" --checkpoint-dir "$ckpt_dir" --checkpoint-every "$ckpt_every" --resume auto)
  echo "# launch   : ${cmd[*]}"
  mkfifo "$tmp/out.$n"
  tee "$tmp/attempt_$n.log" <"$tmp/out.$n" &
  tee_pid=$!
  "${cmd[@]}" >"$tmp/out.$n" 2>&1 </dev/null &
  launcher_pid=$!
  watch_launcher "$launcher_pid" &
  monitor_pid=$!
  local rc=0
  # `wait` returns early when a trapped signal arrives: wait again until the launcher is gone.
  while :; do
    rc=0; wait "$launcher_pid" || rc=$?
    kill -0 "$launcher_pid" 2>/dev/null || break
  done
  kill "$monitor_pid" 2>/dev/null || true; wait "$monitor_pid" 2>/dev/null || true
  wait "$tee_pid" || true
  launcher_pid=""; monitor_pid=""; tee_pid=""
  return "$rc"
}

# probe_hosts: keep the hosts (and their slots) that answer the probe; the others go to `lost`.
# Every host at once: a dead host costs one --probe-timeout, not one per host.
probe_hosts() {
  local probed=$SECONDS h i alive_hosts=() alive_slots=()
  declare -A pid=()
  for h in "${hosts[@]}"; do probe_host "$h" & pid[$h]=$!; done
  lost=()
  for i in "${!hosts[@]}"; do
    if wait "${pid[${hosts[$i]}]}"; then alive_hosts+=("${hosts[$i]}"); alive_slots+=("${slots[$i]}")
    else lost+=("${hosts[$i]}"); fi
  done
  hosts=("${alive_hosts[@]}"); slots=("${alive_slots[@]}")
  probe_s=$((SECONDS - probed))
}

newest_checkpoint() { (cd "$ckpt_dir" && ls ckpt_??????????.h5 2>/dev/null | sort | tail -1); }

mddp_provenance "${args[@]}"
# Hosts already gone at the start are left out, without counting a restart.
probe_hosts
if [ ${#lost[@]} -gt 0 ]; then say "left out at the start: ${lost[*]} (no answer to the probe within $probe_timeout s)"; fi
if [ ${#hosts[@]} -lt "$min_hosts" ]; then say "error: ${#hosts[@]} host(s) answer, fewer than --min-hosts $min_hosts" >&2; exit 1; fi
say "start: ${#hosts[@]} host(s) $(IFS=,; echo "${hosts[*]}"), world size $(world_size), checkpoints in $ckpt_dir every $ckpt_every steps, at most $max_restarts restart(s)"
restarts=0; attempt=0
while :; do
  attempt=$((attempt + 1))
  started=$SECONDS
  rc=0; run_attempt "$attempt" || rc=$?
  took=$((SECONDS - started))
  if [ -n "$stop_signal" ]; then
    # What came back decides: 75 = the ranks wrote a checkpoint (requeue and rerun to continue).
    if [ "$rc" = 75 ]; then
      say "stopped by SIG$stop_signal during attempt $attempt: the ranks wrote a checkpoint and exited 75: rerun to continue"; exit 75
    fi
    say "stopped by SIG$stop_signal during attempt $attempt (exit $rc): not restarting"; exit 1
  fi
  case "$rc" in
    0) say "training finished after $restarts restart(s) (final world size $(world_size))"; exit 0 ;;
    75) say "train stopped on a signal after writing a checkpoint (exit 75): requeue and rerun to continue"; exit 75 ;;
    2) say "train refused its input (exit 2): a restart would not help"; exit 2 ;;
  esac
  what=$(describe_failure "$tmp/attempt_$attempt.log")
  if [ "$restarts" -ge "$max_restarts" ]; then
    say "error: attempt $attempt failed after $took s (exit $rc): $what; restarts exhausted (--max-restarts $max_restarts)" >&2
    exit 1
  fi
  old_world=$(world_size)
  probe_hosts
  if [ ${#hosts[@]} -lt "$min_hosts" ]; then
    say "error: attempt $attempt failed after $took s (exit $rc): $what; lost host(s): ${lost[*]:-none} (probes took $probe_s s); ${#hosts[@]} host(s) answer, fewer than --min-hosts $min_hosts" >&2
    exit 1
  fi
  restarts=$((restarts + 1))
  ckpt=$(newest_checkpoint)
  say "restart $restarts/$max_restarts: attempt $attempt failed after $took s (exit $rc): $what; lost host(s): ${lost[*]:-none} (probes took $probe_s s);" \
      "resuming from ${ckpt:-no checkpoint (fresh start)} on ${#hosts[@]} host(s) $(IFS=,; echo "${hosts[*]}"):" \
      "world size $old_world -> $(world_size)"
done
