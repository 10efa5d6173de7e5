#!/bin/bash
# jobs/lib/gpu_build.sh — the one build recipe of the GPU scripts (gpu_check.sh, gpu_bench.sh,
# gpu_first_run.sh): sourced by them, never run. It decides the build directory, how it is configured
# and what is built, so a benchmark run after the check uses the check's build, and either builds
# it on a node where nothing was built yet.
#
# Settings (environment, with defaults):
#   MICRODDP_GPU_BUILD      the build directory [<repo>/build-gpu; with --emulated <repo>/build-cuda-emu,
#                           the cuda-emu preset's]
#   MICRODDP_GPU_PREBUILT   1: the build directory was built elsewhere (a GPU node without the
#                           development packages: build on a machine that has them, bring the
#                           directory, same absolute path): nothing is configured or built, the
#                           binaries must be there [0]
#   MICRODDP_CUDA_ARCHS     CMAKE_CUDA_ARCHITECTURES [80;90: A100 and H100/H200]
#   MICRODDP_BUILD_JOBS     build parallelism [SLURM_CPUS_PER_TASK, else nproc]
#   CUDACXX                 nvcc [nvcc on PATH, else /usr/local/cuda/bin/nvcc]
#
# Functions:
#   gpu_build_init EMULATED SRC_DIR   sets GPU_BUILD_DIR, GPU_NVCC, GPU_JOBS, GPU_PREBUILT and
#                                     GPU_BUILD_TOOLS (the tools the recipe needs: cmake, ninja, and
#                                     nvcc for a real build; none when prebuilt)
#   gpu_configure LOG                 configures (real: CUDA and NCCL requested explicitly, so a missing
#                                     one is a configure error, never a CPU-only build that would then
#                                     "pass"; emulated: the cuda-emu preset); output in LOG; its exit
#                                     code. Prebuilt: checks the directory has a CMakeCache.txt.
#   gpu_build TIMEOUT_S TARGET...     builds the targets quietly (on failure once more with -j 1, the
#                                     last lines shown); its exit code. Prebuilt: checks the microddp
#                                     binary is there.
#   gpu_mpiexec_flags MPIEXEC         sets GPU_MPIEXEC_FLAGS: Open MPI gets --oversubscribe --bind-to
#                                     none (a 1-task allocation may start several ranks), and
#                                     --allow-run-as-root as root; MICRODDP_MPIEXEC_FLAGS replaces them.

gpu_build_init() {  # gpu_build_init EMULATED SRC_DIR
  local emulated="$1" src="$2"
  GPU_SRC_DIR="$src"
  GPU_EMULATED="$emulated"
  GPU_PREBUILT="${MICRODDP_GPU_PREBUILT:-0}"
  if [[ ${emulated} == 1 ]]; then
    GPU_BUILD_DIR="${MICRODDP_GPU_BUILD:-${src}/build-cuda-emu}"
  else
    GPU_BUILD_DIR="${MICRODDP_GPU_BUILD:-${src}/build-gpu}"
  fi
  GPU_CUDA_ARCHS="${MICRODDP_CUDA_ARCHS:-80;90}"
  GPU_JOBS="${MICRODDP_BUILD_JOBS:-${SLURM_CPUS_PER_TASK:-$(nproc)}}"
  GPU_NVCC="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
  GPU_BUILD_TOOLS=()
  if [[ ${GPU_PREBUILT} != 1 ]]; then
    GPU_BUILD_TOOLS=(cmake ninja)
    [[ ${emulated} == 1 ]] || GPU_BUILD_TOOLS+=("${GPU_NVCC}")
  fi
}

gpu_configure() {  # gpu_configure LOG
  local log="$1"
  if [[ ${GPU_PREBUILT} == 1 ]]; then
    if [[ -f ${GPU_BUILD_DIR}/CMakeCache.txt ]]; then
      echo "prebuilt: ${GPU_BUILD_DIR}" >"${log}"
      return 0
    fi
    echo "MICRODDP_GPU_PREBUILT=1 but ${GPU_BUILD_DIR} holds no build (no CMakeCache.txt)" >"${log}"
    return 1
  fi
  local configure
  if [[ ${GPU_EMULATED} == 1 ]]; then
    configure=(cmake --preset cuda-emu -S "${GPU_SRC_DIR}")
    [[ -n ${MICRODDP_GPU_BUILD:-} ]] && configure+=(-B "${GPU_BUILD_DIR}")
  else
    configure=(cmake -S "${GPU_SRC_DIR}" -B "${GPU_BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=Release
               -DCMAKE_CUDA_COMPILER="${GPU_NVCC}" -DCMAKE_CUDA_ARCHITECTURES="${GPU_CUDA_ARCHS}"
               -DMICRODDP_CUDA=ON -DMICRODDP_NCCL=ON)
  fi
  (cd "${GPU_SRC_DIR}" && "${configure[@]}") >"${log}" 2>&1
}

gpu_build() {  # gpu_build TIMEOUT_S TARGET...
  local limit="$1"; shift
  if [[ ${GPU_PREBUILT} == 1 ]]; then
    [[ -x ${GPU_BUILD_DIR}/microddp ]] && return 0
    echo "MICRODDP_GPU_PREBUILT=1 but ${GPU_BUILD_DIR}/microddp is missing"
    return 1
  fi
  local targets=()
  local t
  for t in "$@"; do targets+=(--target "$t"); done
  timeout -k 30 "${limit}" cmake --build "${GPU_BUILD_DIR}" -j "${GPU_JOBS}" "${targets[@]}" >/dev/null 2>&1 && return 0
  timeout -k 30 600 cmake --build "${GPU_BUILD_DIR}" -j 1 "${targets[@]}" 2>&1 | tail -n 30
  return 1
}

gpu_mpiexec_flags() {  # gpu_mpiexec_flags MPIEXEC
  GPU_MPIEXEC_FLAGS=()
  if "$1" --version 2>&1 | grep -qiE "Open MPI|OpenRTE|open-mpi"; then
    GPU_MPIEXEC_FLAGS=(--oversubscribe --bind-to none)
    [[ $(id -u) == 0 ]] && GPU_MPIEXEC_FLAGS+=(--allow-run-as-root)
  fi
  if [[ -n ${MICRODDP_MPIEXEC_FLAGS:-} ]]; then read -r -a GPU_MPIEXEC_FLAGS <<<"${MICRODDP_MPIEXEC_FLAGS}"; fi
}
