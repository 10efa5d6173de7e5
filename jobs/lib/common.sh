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
#   OMPI_MCA_mpi_yield_when_idle   Open MPI: yield while waiting   [1] (why: docs/performance.md,
#                  "The communication thread needs a core"; 0 = Open MPI's busy polling)

mddp_init() {
  MICRODDP_BIN=${MICRODDP_BIN:-${SLURM_SUBMIT_DIR:-$PWD}/build/microddp}
  RESULTS_DIR=${RESULTS_DIR:-${SLURM_SUBMIT_DIR:-$PWD}/results/${SLURM_JOB_NAME:-local}}
  if [ -n "${SLURM_JOB_ID:-}" ]; then LAUNCHER=${LAUNCHER:-srun}; else LAUNCHER=${LAUNCHER:-mpirun}; fi
  mkdir -p "$RESULTS_DIR"
  [ -x "$MICRODDP_BIN" ] || { echo "error: MICRODDP_BIN=$MICRODDP_BIN is not an executable (build first: ./setup.sh build)" >&2; exit 2; }
  # One BLAS thread per CPU given to each task, so ranks sharing a node never oversubscribe it.
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-1}}
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
  echo "# nodes    : ${SLURM_JOB_NUM_NODES:-1} (${SLURM_JOB_NODELIST:-$(hostname)}), tasks ${SLURM_NTASKS:-?}, cpus/task ${SLURM_CPUS_PER_TASK:-1}, gpus/node ${MDDP_GPUS_PER_NODE:-0}"
  echo "# host     : $(hostname)  binary: $MICRODDP_BIN"
  echo "# results  : $RESULTS_DIR"
  echo "# mpi      : $(mpirun --version 2>/dev/null | head -1 || echo unknown); OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-unset}"
  echo "# --------------------"
}

# mddp_launch NTASKS CMD... — start NTASKS ranks of CMD (srun in a job, mpirun otherwise).
mddp_launch() {
  local n=$1; shift
  if [ "$LAUNCHER" = srun ]; then
    echo "# launch   : srun x$n: $*"
    # shellcheck disable=SC2086
    srun --ntasks="$n" ${SRUN_FLAGS:-} "$@"
  else
    echo "# launch   : ${MPIRUN:-mpirun} x$n: $*"
    local root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    # shellcheck disable=SC2086
    ${MPIRUN:-mpirun} "${root[@]}" ${MPIRUN_FLAGS:---oversubscribe --bind-to none} -np "$n" "$@"
  fi
}
