#!/bin/bash
# sweep.sh — driver of a strong/weak scaling study.
#
#   jobs/sweep.sh slurm   one scaling_point.sbatch job per node count in NODE_COUNTS, then
#                         aggregate.sbatch once they all ended (--dependency=afterany); prints the
#                         job ids and writes them to $RESULTS_DIR/jobids
#   jobs/sweep.sh local   the same points with mpirun on this machine for RANK_COUNTS, then the
#                         aggregation, in the foreground
#
# Settings (environment): NODE_COUNTS [1 2 4 8], TASKS_PER_NODE [1], RANK_COUNTS [1 2 4] (local),
# RESULTS_DIR [$PWD/results/scaling], SBATCH_ARGS [] (e.g. --partition=... --account=...),
# and every tunable of scaling_point.sbatch / aggregate.sbatch (passed through the environment),
# MICRODDP_SITE_ENV included (sourced here and by every job: jobs/lib/common.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
source "$here/lib/common.sh"
mddp_site_env
export MDDP_JOBS_DIR=$here
export RESULTS_DIR=${RESULTS_DIR:-$PWD/results/scaling}
mkdir -p "$RESULTS_DIR"
mode=${1:-slurm}
case "$mode" in
  slurm)
    ids=()
    for n in ${NODE_COUNTS:-1 2 4 8}; do
      # shellcheck disable=SC2086
      id=$(sbatch --parsable ${SBATCH_ARGS:-} --nodes="$n" --ntasks-per-node="${TASKS_PER_NODE:-1}" \
             --job-name="mddp-scaling-n$n" --export=ALL "$here/scaling_point.sbatch")
      ids+=("${id%%;*}")
      echo "point: $n node(s) -> job ${id%%;*}"
    done
    dep=$(IFS=:; echo "${ids[*]}")
    # shellcheck disable=SC2086
    agg=$(sbatch --parsable ${SBATCH_ARGS:-} --dependency="afterany:$dep" --export=ALL "$here/aggregate.sbatch")
    echo "aggregate -> job ${agg%%;*}"
    echo "${ids[*]} ${agg%%;*}" >"$RESULTS_DIR/jobids"
    ;;
  local)
    for n in ${RANK_COUNTS:-1 2 4}; do NTASKS=$n LAUNCHER=mpirun bash "$here/scaling_point.sbatch"; done
    LAUNCHER=mpirun bash "$here/aggregate.sbatch"
    ;;
  *) echo "usage: $0 slurm|local" >&2; exit 2 ;;
esac
