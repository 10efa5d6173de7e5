#!/bin/bash
# thread_defaults.sh — `train` picks its BLAS thread count from the allocation and says where it
# came from (app/blas_threads.hpp): under `taskset -c 0` 1 thread, each variable honoured in its
# order, --threads above all, 2 ranks on the same CPUs share them.
# Usage: thread_defaults.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; shift
mpiexec="$1"; shift
mpi_flags=("$@")
failures=0
# The variables under test start unset, whatever the caller's environment holds.
clean=(env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS -u SLURM_CPUS_PER_TASK)
t=(train --steps 1 --width 8 --depth 1 --global-batch 8)

expect() {  # expect "<threads line>" <command...>: the header's threads line, exactly
  local want="$1"; shift
  local got
  got=$("$@" 2>&1 | sed -n 's/^#   threads    : //p' | head -1)
  if [ "$got" = "$want" ]; then
    echo "ok   $want  <- $*"
  else
    echo "FAIL: $*"; echo "     want '$want'"; echo "     got  '$got'"; failures=$((failures + 1))
  fi
}

expect "1 thread (affinity 1 CPU / 1 rank)"  "${clean[@]}" taskset -c 0 "$bin" "${t[@]}"
expect "1 thread (OPENBLAS_NUM_THREADS)"     "${clean[@]}" OPENBLAS_NUM_THREADS=1 taskset -c 0 "$bin" "${t[@]}"
expect "1 thread (OMP_NUM_THREADS)"          "${clean[@]}" OMP_NUM_THREADS=1 taskset -c 0 "$bin" "${t[@]}"
expect "1 thread (OPENBLAS_NUM_THREADS)"     "${clean[@]}" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=2 taskset -c 0 "$bin" "${t[@]}"
expect "1 thread (SLURM_CPUS_PER_TASK)"      "${clean[@]}" SLURM_CPUS_PER_TASK=1 taskset -c 0 "$bin" "${t[@]}"
expect "1 thread (OMP_NUM_THREADS)"          "${clean[@]}" OMP_NUM_THREADS=1 SLURM_CPUS_PER_TASK=2 taskset -c 0 "$bin" "${t[@]}"
expect "1 thread (--threads)"                "${clean[@]}" OPENBLAS_NUM_THREADS=2 taskset -c 0 "$bin" "${t[@]}" --threads 1
# More threads than CPUs (a bare srun on Slurm >= 22.05 gives a task 1 CPU) is said, not hidden.
expect "2 threads (SLURM_CPUS_PER_TASK); warning: this rank may run on 1 CPU only (affinity, cgroup quota), which its threads time-share" \
                                             "${clean[@]}" SLURM_CPUS_PER_TASK=2 taskset -c 0 "$bin" "${t[@]}"
# Two ranks on one node share its CPUs (no binding: both see the same CPU set).
if [ "$(nproc)" -ge 2 ]; then
  expect "1 thread (affinity 2 CPUs / 2 ranks)" "${clean[@]}" taskset -c 0,1 "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "${t[@]}"
fi
# A variable that is not a count is refused before MPI starts, naming it (exit 2).
out=$("${clean[@]}" OMP_NUM_THREADS=lots "$bin" "${t[@]}" 2>&1); rc=$?
if [ "$rc" = 2 ] && grep -qF "OMP_NUM_THREADS='lots' is not a thread count" <<<"$out"; then
  echo "ok   OMP_NUM_THREADS=lots: exit 2, named"
else
  echo "FAIL: OMP_NUM_THREADS=lots: exit $rc: $out"; failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] && echo "thread defaults: OK"
[ "$failures" -eq 0 ]
