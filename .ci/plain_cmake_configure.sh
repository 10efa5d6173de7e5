#!/bin/bash
# plain_cmake_configure.sh — the build a module-based cluster does (docs/hpc.md, "Building on a
# module-based site"): plain CMake, no setup.sh, every dependency named by an explicit path — here
# Debian's, where a site's modules would put theirs — and the configure must find each one where it
# was told (its summary is checked). A configure only: the build that follows is the one the other CI
# steps already run. With the CUDA toolkit installed (/usr/local/cuda or CUDA_HOME) the CUDA and NCCL
# options are named too. Exit 0 when the configure succeeded and found what was named.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
lib=/usr/lib/$arch
hdf5=$lib/hdf5/openmpi
blas=$lib/openblas-pthread/libopenblas.so
args=(-DCMAKE_BUILD_TYPE=Release
      -DMPI_CXX_COMPILER=/usr/bin/mpicxx
      -DHDF5_ROOT="$hdf5"
      -DBLAS_LIBRARIES="$blas"
      -DMICRODDP_CBLAS_INCLUDE_DIR="/usr/include/$arch/openblas-pthread"
      -DCLI11_DIR=/usr/share/cmake/CLI11
      -Dnlohmann_json_DIR=/usr/share/cmake/nlohmann_json
      -DZLIB_ROOT=/usr
      -DMICRODDP_TESTS=OFF)
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -x "$cuda/bin/nvcc" ]; then
  args+=(-DMICRODDP_CUDA=ON -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCMAKE_CUDA_ARCHITECTURES=90
         -DMICRODDP_NCCL=ON -DNCCL_ROOT="$cuda")
else
  args+=(-DMICRODDP_CUDA=OFF)
fi
echo "[plain-cmake] cmake -S . -B <tmp> -G Ninja ${args[*]}"
if ! cmake -S . -B "$dir" -G Ninja "${args[@]}" >"$dir/configure.log" 2>&1; then
  tail -30 "$dir/configure.log"; echo "[plain-cmake] configure FAILED"; exit 1
fi
sed -n '/microddp .* configuration/,/sanitizers/p' "$dir/configure.log"
found() {  # found WHAT PATTERN: the summary line of WHAT matches PATTERN
  grep -qE -- "$2" "$dir/configure.log" || { echo "[plain-cmake] $1: not what was named (want /$2/)"; exit 1; }
}
found MPI "MPI +: Open MPI .*\\(MPI [0-9.]+, /usr/bin/mpicxx\\)\$"
found BLAS "BLAS +: OpenBLAS \\($blas\\)\$"
found HDF5 "HDF5 +: [0-9.]+, parallel \\($hdf5/include\\)\$"
found zlib "zlib +: [0-9.]+ \\(/usr/"
if [ -x "$cuda/bin/nvcc" ]; then
  found CUDA "CUDA \\(MICRODDP_CUDA\\): CUDA [0-9.]+, architectures 90\$"
  found NCCL "NCCL \\(MICRODDP_NCCL\\): [0-9]+[.][0-9]+"
fi
echo "[plain-cmake] OK: configured from explicit paths"
