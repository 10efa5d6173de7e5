#!/bin/bash
# jobs/lib/common.sh — sourced by every job script: defaults, provenance, the rank launcher.
#
# Settings (environment, with defaults):
#   MICRODDP_BIN   the microddp binary          [$SLURM_SUBMIT_DIR/build/microddp]
#   RESULTS_DIR    where results/logs go         [$SLURM_SUBMIT_DIR/results/$SLURM_JOB_NAME]
#   LAUNCHER       srun | mpirun (local runs)    [srun inside a SLURM job, else mpirun]
#   MPIRUN_FLAGS   extra mpirun flags            [--oversubscribe --bind-to none]
#   MPIRUN         the mpirun command of LAUNCHER=mpirun, split at spaces [mpirun]: a wrapper that
#                  takes mpirun's arguments, e.g. the emulated cluster's
#                  "tests/cluster/cluster.sh mpirun --slots 1" (one rank per emulated host)
#   SRUN_FLAGS     extra srun flags              [] (e.g. --mpi=pmix where it is not the default)
#   MICRODDP_SITE_ENV  a file sourced first, before anything else runs: the site's module loads,
#                  NCCL/UCX settings (jobs/README.md, "Site settings")   [unset: nothing sourced]
#   MAX_REQUEUES   signal requeues of one job (mddp_requeue)   [10]
#   CPUs per task: every srun line passes --cpus-per-task (SRUN_CPUS_PER_TASK, else the job's
#                  SLURM_CPUS_PER_TASK, else 1): Slurm >= 22.05 no longer hands sbatch's
#                  --cpus-per-task to srun, which would give each task 1 CPU. SRUN_CPUS_PER_TASK is
#                  exported too, for srun lines of the user's own (EXTRA_ARGS, site files).
#   BLAS threads:  train decides (src/app/blas_threads.hpp): OPENBLAS_NUM_THREADS or OMP_NUM_THREADS
#                  when the user exported one, else SLURM_CPUS_PER_TASK, else the CPUs it may run on
#                  divided among the ranks of its node; its header says the number and the source.
#   OMPI_MCA_mpi_yield_when_idle   Open MPI: yield while waiting   [1] (why: docs/performance.md,
#                  "The communication thread needs a core"; 0 = Open MPI's busy polling)

# The site's settings (module loads, NCCL/UCX variables), sourced when MICRODDP_SITE_ENV names a
# file. Site files (module, spack) are seldom written for `set -eu`: it is off while one runs.
mddp_site_env() {
  [ -n "${MICRODDP_SITE_ENV:-}" ] || return 0
  [ -r "$MICRODDP_SITE_ENV" ] || { echo "error: MICRODDP_SITE_ENV=$MICRODDP_SITE_ENV is not a readable file" >&2; exit 2; }
  set +eu
  # shellcheck disable=SC1090
  source "$MICRODDP_SITE_ENV"
  set -eu
}

# The CPUs each srun task gets: srun's own setting, else the job's.
mddp_cpus_per_task() { echo "${SRUN_CPUS_PER_TASK:-${SLURM_CPUS_PER_TASK:-1}}"; }

mddp_init() {
  mddp_site_env
  MICRODDP_BIN=${MICRODDP_BIN:-${SLURM_SUBMIT_DIR:-$PWD}/build/microddp}
  RESULTS_DIR=${RESULTS_DIR:-${SLURM_SUBMIT_DIR:-$PWD}/results/${SLURM_JOB_NAME:-local}}
  if [ -n "${SLURM_JOB_ID:-}" ]; then LAUNCHER=${LAUNCHER:-srun}; else LAUNCHER=${LAUNCHER:-mpirun}; fi
  mkdir -p "$RESULTS_DIR"
  [ -x "$MICRODDP_BIN" ] || { echo "error: MICRODDP_BIN=$MICRODDP_BIN is not an executable (build first: ./setup.sh build)" >&2; exit 2; }
  # Each task gets the CPUs the job asked for per task (Slurm >= 22.05: srun must be told), and
  # train runs that many BLAS threads (SLURM_CPUS_PER_TASK), so ranks sharing a node never
  # oversubscribe it. An OPENBLAS_NUM_THREADS the user exported still wins.
  if [ -n "${SLURM_JOB_ID:-}" ]; then export SRUN_CPUS_PER_TASK; SRUN_CPUS_PER_TASK=$(mddp_cpus_per_task); fi
  export OMP_WAIT_POLICY=PASSIVE
  # Every CPU of a task runs a BLAS thread, so the communication thread of overlap/bucketed has no
  # core of its own; an MPI that busy-polls while it waits for a peer then steals the compute's
  # core (measured here: overlap 133-136 ms per step spinning, 98-106 ms yielding).
  export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
}

# Provenance: what ran where, when, from which commit.
mddp_provenance() {
  local src; src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  echo "# ---- provenance ----"
  echo "# date     : $(date -Is)"
  echo "# script   : $0 $*"
  echo "# commit   : $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$src" diff --quiet 2>/dev/null || echo ' (modified)')"
  echo "# job      : ${SLURM_JOB_ID:-none} name=${SLURM_JOB_NAME:-} array=${SLURM_ARRAY_TASK_ID:-} restarts=${SLURM_RESTART_COUNT:-0}"
  echo "# nodes    : ${SLURM_JOB_NUM_NODES:-1} (${SLURM_JOB_NODELIST:-$(hostname)}), tasks ${SLURM_NTASKS:-?}, cpus/task ${SLURM_CPUS_PER_TASK:-1} (srun: $(mddp_cpus_per_task)), gpus/node ${MDDP_GPUS_PER_NODE:-0}"
  local threads="train decides (its header says how)"
  [ -z "${OPENBLAS_NUM_THREADS:-}" ] || threads="OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS"
  echo "# site env : ${MICRODDP_SITE_ENV:-none}; BLAS threads: $threads"
  echo "# host     : $(hostname)  binary: $MICRODDP_BIN"
  echo "# results  : $RESULTS_DIR"
  echo "# mpi      : $(mpirun --version 2>/dev/null | head -1 || echo unknown); OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-unset}"
  echo "# --------------------"
}

# mddp_requeue RC — after a run that ended with RC: 75 (train stopped on SIGUSR1/SIGTERM after a
# checkpoint) requeues the job (same id; the next run resumes), unless it has been requeued
# MAX_REQUEUES [10] times already (SLURM_RESTART_COUNT). Returns the script's exit code: 0 when
# requeued, else RC.
mddp_requeue() {
  local rc=$1 count=${SLURM_RESTART_COUNT:-0} max=${MAX_REQUEUES:-10}
  [ "$rc" = 75 ] || return "$rc"
  if [ -z "${SLURM_JOB_ID:-}" ]; then
    echo "# stopped by signal after a checkpoint (exit 75): run again to continue"
    return 75
  fi
  if [ "$count" -ge "$max" ]; then
    echo "# stopped by signal after a checkpoint; NOT requeueing: job $SLURM_JOB_ID was requeued $count times (MAX_REQUEUES=$max). Submit again with the same CKPT_DIR to continue."
    return 75
  fi
  echo "# stopped by signal after a checkpoint: requeue $((count + 1)) of at most $max of job $SLURM_JOB_ID"
  scontrol requeue "$SLURM_JOB_ID"
  return 0
}

# mddp_launch NTASKS CMD... — start NTASKS ranks of CMD (srun in a job, mpirun otherwise). Its own
# line ("# launch : ...") goes to stderr: stdout is CMD's alone, so `mddp_launch ... --json >F`
# writes exactly CMD's output.
mddp_launch() {
  local n=$1; shift
  if [ "$LAUNCHER" = srun ]; then
    echo "# launch   : srun x$n: $*" >&2
    # shellcheck disable=SC2086
    srun --ntasks="$n" --cpus-per-task="$(mddp_cpus_per_task)" ${SRUN_FLAGS:-} "$@"
  else
    echo "# launch   : ${MPIRUN:-mpirun} x$n: $*" >&2
    local root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    # shellcheck disable=SC2086
    ${MPIRUN:-mpirun} "${root[@]}" ${MPIRUN_FLAGS:---oversubscribe --bind-to none} -np "$n" "$@"
  fi
}
