#!/bin/bash
# setup.sh — install microddp's dependencies (Debian packages), build, and run or test.
#
#   ./setup.sh run     install + build the `microddp` program only + train the default model on 2
#                      MPI ranks (the tests, lab graders and GPU tests are built by `test` and `build`)
#   ./setup.sh test    install + build + run the whole test suite (what CI runs)
#   ./setup.sh deps    install the dependencies only
#   ./setup.sh build   install + build only
#   ./setup.sh sanitize  install + build and test the sanitizer configurations (CMakePresets.json:
#                      asan = ASan+UBSan with clang in build-asan/, which also builds the libFuzzer
#                      targets; tsan = ThreadSanitizer in build-tsan/), unit and MPI tests; CI runs
#                      it after `test`
#   ./setup.sh fuzz    the libFuzzer targets of build-asan/ (build preset fuzz: only what is missing
#                      after `sanitize`), then FUZZ_SECONDS (default 15) of fuzzing per target
#                      (tests/fuzz/run_fuzz.sh); CI runs it last
#   ./setup.sh cuda-emu  the GPU path on the emulated CUDA device (no GPU needed; docs/cuda_emu.md):
#                      preset cuda-emu in build-cuda-emu/, its tests (every cuda/nccl test must pass
#                      there), then jobs/gpu_check.sh --emulated and jobs/gpu_bench.sh --emulated
#                      (the GPU benchmark table at tiny sizes); CI runs it after `test`
#
# Idempotent and quiet when everything is already installed. Settings from the environment:
#   BUILD_DIR (default build), JOBS (default: number of cores), MICRODDP_CMAKE_ARGS (extra -D...),
#   SANITIZERS (default "asan tsan": the presets `sanitize` runs).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-$(nproc)}"

# Debian packages the project needs (build, run, test).
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  openmpi-bin libopenmpi-dev
  libopenblas-dev
  libgtest-dev libgmock-dev
  libcli11-dev nlohmann-json3-dev
  libhdf5-openmpi-dev hdf5-tools
  zlib1g-dev                          # IDX data sets (MNIST, Fashion-MNIST) read gzip-compressed
  slurm-wlm munge python3-matplotlib  # the slurm test: local cluster, job-script aggregation plots
  iproute2 util-linux                 # the emulated cluster (tests/cluster/cluster.sh): ip netns, tc, nsenter, unshare
  python3-h5py python3-numpy          # io.h5py_data: data sets written with h5py (skipped without)
  dataset-fashion-mnist               # io.fashion_mnist_slice: a real data set in CI (IDX files, ~30 MB)
  clang libclang-rt-14-dev            # the fuzz build: libFuzzer and clang's sanitizer runtimes
)

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  echo "[setup] installing: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build [TARGET...]: configure, then build the targets (default: everything).
build() {
  local cuda_args=() targets=()
  if [ $# -gt 0 ]; then targets=(--target "$@"); fi
  # nvcc is often installed outside PATH (e.g. /usr/local/cuda/bin).
  if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  fi
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" ${MICRODDP_CMAKE_ARGS:-} >/dev/null
  cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
}

# Configure, build and test each sanitizer preset; run all of them, then fail if any failed.
sanitize() {
  local failed=() p t0
  for p in ${SANITIZERS:-asan tsan}; do
    echo "[setup] sanitizer build: $p (build-$p/)"
    t0=$SECONDS
    # Test slots: twice the cores as in `test` (the MPI tests mostly wait), except under TSan, whose
    # tests are compute-bound (its instrumentation slows every memory access).
    local slots=$((JOBS * 2))
    if [ "$p" = tsan ]; then slots=$JOBS; fi
    if cmake --preset "$p" >/dev/null && cmake --build --preset "$p" -j "$JOBS" &&
       ctest --preset "$p" -j "$slots" ${CTEST_ARGS:-}; then
      echo "[setup] $p: passed in $((SECONDS - t0)) s"
    else
      echo "[setup] $p: FAILED after $((SECONDS - t0)) s"
      failed+=("$p")
    fi
  done
  if [ ${#failed[@]} -ne 0 ]; then echo "[setup] sanitizer runs failed: ${failed[*]}" >&2; return 1; fi
}

# mpirun flags for running as root in a container and on small machines: launcher configuration,
# never library code. mpi_yield_when_idle: the ranks' BLAS threads fill the cores, so an MPI that
# busy-polls would steal them from compute (docs/performance.md, "The communication thread needs a
# core").
mpirun_flags() {
  local flags=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
  if [ "$(id -u)" -eq 0 ]; then flags+=(--allow-run-as-root); fi
  echo "${flags[@]}"
}

cmd="${1:-run}"
case "$cmd" in
  deps) install_deps ;;
  build) install_deps; build ;;
  run)
    install_deps; build microddp
    # shellcheck disable=SC2046
    mpirun -np 2 $(mpirun_flags) "$BUILD_DIR/microddp" train
    ;;
  test)
    install_deps; build
    cd "$BUILD_DIR"
    # Twice as many test slots as cores: each test reserves a slot per rank (PROCESSORS), but most
    # MPI tests spend their time starting ranks and waiting (timeouts, daemons), and their ranks
    # yield an idle core (mpi_yield_when_idle), so two of them share the cores well (README,
    # "Developing": the measured times).
    ctest --output-on-failure -j "$((JOBS * 2))" ${CTEST_ARGS:-}
    ;;
  sanitize) install_deps; sanitize ;;
  cuda-emu)  # the emulated-device build and its tests, then the GPU check and benchmark scripts against it
    install_deps
    cmake --preset cuda-emu >/dev/null && cmake --build --preset cuda-emu -j "$JOBS" &&
      ctest --preset cuda-emu -j "$((JOBS * 2))" ${CTEST_ARGS:-} &&
      CUDA_EMU_NODE_GPUS=2 MICRODDP_GPU_CHECK_SKIP_CTEST=1 MICRODDP_BUILD_JOBS="$JOBS" bash jobs/gpu_check.sh --emulated &&
      CUDA_EMU_NODE_GPUS=2 bash jobs/gpu_bench.sh --emulated
    ;;
  fuzz)  # the libFuzzer targets of the clang ASan/UBSan build (build-asan/), then a short run of each
    install_deps
    cmake --preset asan >/dev/null && cmake --build --preset fuzz -j "$JOBS" &&
      tests/fuzz/run_fuzz.sh build-asan "${FUZZ_SECONDS:-15}"
    ;;
  *) echo "usage: $0 [run|test|deps|build|sanitize|cuda-emu|fuzz]" >&2; exit 2 ;;
esac
