// blas_threads.hpp — how many BLAS threads a rank runs when the user did not say, decided from the
// allocation the rank runs in, and where that number came from (the train header prints both).
//
// Order (the first that applies wins):
//   1. --threads N
//   2. an explicit OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS (what OpenBLAS itself reads, in its
//      order; OMP_NUM_THREADS "4,2" means 4 at the outer level)
//   3. SLURM_CPUS_PER_TASK (the CPUs Slurm gave each task; srun must pass --cpus-per-task on
//      Slurm >= 22.05, jobs/README.md)
//   4. the CPUs this rank may run on — its affinity mask, limited by a cgroup CPU quota (v2 cpu.max,
//      v1 cfs_quota_us / cfs_period_us, the smallest on the way to the root) — divided among the
//      ranks of the job on this node, at least 1. Dividing by every node-local rank assumes they
//      share one CPU set (mpirun --bind-to none, a container's quota); ranks bound to disjoint
//      cores get fewer threads than they could have, never more CPUs than exist.
// The answer also says how many CPUs the rank may use, so a choice from 1-3 that exceeds them is
// reported (a bare `srun` on Slurm >= 22.05 gives a task 1 CPU whatever --cpus-per-task said).
//
// Contract: the library never reads the environment; the app parses the variables once before MPI
// starts (thread_env_from(): a bad value is a core::UsageError naming the variable, exit 2 on every
// rank), reads the affinity and the cgroup quota when it decides (read_cpu_allocation()), and
// choose_blas_threads() is a pure function of those facts (tests/app/test_blas_threads.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/env_lookup.hpp"

namespace microddp::app {

// The variables that set a thread count explicitly; 0 = not set (or set to the empty string).
struct ThreadEnv {
  int openblas_num_threads = 0;
  int omp_num_threads = 0;
  int slurm_cpus_per_task = 0;
};
ThreadEnv thread_env_from(const core::EnvLookup& env);

// The CPUs this process may run on.
struct CpuAllocation {
  int affinity_cpus = 0;    // CPUs in the affinity mask (0: unknown)
  double quota_cpus = 0.0;  // cgroup CPU quota in CPUs, quota / period (0: no quota)
  int online_cpus = 1;      // the machine's (std::thread::hardware_concurrency)
  // affinity ∩ quota: the affinity (or the online CPUs when unknown), at most the quota rounded
  // down, at least 1.
  int usable_cpus() const;
};
CpuAllocation read_cpu_allocation();

// The quota of one cgroup v2 `cpu.max` ("150000 100000" = 1.5 CPUs; "max 100000" = none: nullopt),
// and of a v1 pair (cpu.cfs_quota_us, cpu.cfs_period_us; quota -1 = none). Malformed text: nullopt.
std::optional<double> cgroup_v2_quota_cpus(std::string_view cpu_max);
std::optional<double> cgroup_v1_quota_cpus(std::string_view quota_us, std::string_view period_us);

struct ThreadChoice {
  int threads = 1;
  std::string source;   // "--threads", "OPENBLAS_NUM_THREADS", "affinity 2 CPUs / 1 rank", ...
  int usable_cpus = 1;  // CpuAllocation::usable_cpus() of this rank
  // "2 threads (affinity 2 CPUs / 1 rank)"; with more threads than usable CPUs, a warning follows.
  std::string describe() const;
  bool oversubscribed() const { return threads > usable_cpus; }
};

// threads_option: --threads (0: not given). local_ranks: ranks of the job on this node (>= 1).
ThreadChoice choose_blas_threads(int threads_option, const ThreadEnv& env, const CpuAllocation& cpus, int local_ranks);

}  // namespace microddp::app
