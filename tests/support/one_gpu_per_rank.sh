#!/bin/bash
# one_gpu_per_rank.sh PROGRAM [ARGS...] — runs PROGRAM with CUDA_VISIBLE_DEVICES set to this rank's
# node-local rank, so every rank sees exactly one GPU, as `srun --gpus-per-task=1` arranges (each
# rank's GPU is then its device 0). Used as the WRAPPER of MPI tests (cmake/MicroddpTesting.cmake)
# on the emulated device, whose node GPUs come from CUDA_EMU_NODE_GPUS.
set -euo pipefail
local_rank="${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-}}}"
if [ -z "$local_rank" ]; then
  echo "one_gpu_per_rank.sh: no node-local rank in the environment (run it under mpiexec or srun)" >&2
  exit 2
fi
export CUDA_VISIBLE_DEVICES="$local_rank"
exec "$@"
