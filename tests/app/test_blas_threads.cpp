// test_blas_threads.cpp — the BLAS thread count from the allocation (app/blas_threads.hpp): the order
// of the sources, the division among node-local ranks, affinity ∩ cgroup quota, the cgroup file
// formats, the environment's values checked, and what the header says.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "app/blas_threads.hpp"
#include "core/error.hpp"

namespace microddp::app {
namespace {

CpuAllocation cpus(int affinity, double quota = 0.0, int online = 64) { return CpuAllocation{affinity, quota, online}; }

core::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(BlasThreads, OptionThenEnvironmentThenSlurmThenAllocation) {
  const ThreadEnv all{3, 5, 7};
  EXPECT_EQ(choose_blas_threads(2, all, cpus(8), 1).threads, 2);
  EXPECT_EQ(choose_blas_threads(2, all, cpus(8), 1).source, "--threads");
  EXPECT_EQ(choose_blas_threads(0, all, cpus(8), 1).source, "OPENBLAS_NUM_THREADS");
  EXPECT_EQ(choose_blas_threads(0, all, cpus(8), 1).threads, 3);
  EXPECT_EQ(choose_blas_threads(0, ThreadEnv{0, 5, 7}, cpus(8), 1).source, "OMP_NUM_THREADS");
  EXPECT_EQ(choose_blas_threads(0, ThreadEnv{0, 5, 7}, cpus(8), 1).threads, 5);
  // Slurm's count is per task: not divided among the ranks.
  const ThreadChoice slurm = choose_blas_threads(0, ThreadEnv{0, 0, 7}, cpus(8), 4);
  EXPECT_EQ(slurm.source, "SLURM_CPUS_PER_TASK");
  EXPECT_EQ(slurm.threads, 7);
  EXPECT_EQ(choose_blas_threads(0, ThreadEnv{}, cpus(8), 1).threads, 8);
}

TEST(BlasThreads, AllocationIsSharedByTheRanksOfTheNode) {
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(8), 2).threads, 4);
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(8), 3).threads, 2);  // rounded down: never more threads than CPUs
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(2), 4).threads, 1);  // at least one
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(2), 0).threads, 2);  // a rank count of 0 reads as 1
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(2), 1).describe(), "2 threads (affinity 2 CPUs / 1 rank)");
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(1), 1).describe(), "1 thread (affinity 1 CPU / 1 rank)");
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(8), 2).describe(), "4 threads (affinity 8 CPUs / 2 ranks)");
  // Affinity unknown: the online CPUs.
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(0, 0.0, 6), 2).describe(), "3 threads (6 online CPUs / 2 ranks)");
}

TEST(BlasThreads, CgroupQuotaLimitsTheAffinity) {
  // 1.5 CPUs of quota on 8 CPUs of affinity: 1 CPU busy without throttling.
  EXPECT_EQ(cpus(8, 1.5).usable_cpus(), 1);
  EXPECT_EQ(cpus(8, 4.0).usable_cpus(), 4);
  EXPECT_EQ(cpus(2, 4.0).usable_cpus(), 2);   // the affinity is the smaller
  EXPECT_EQ(cpus(8, 0.25).usable_cpus(), 1);  // below one CPU: one thread still runs
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(8, 4.0), 2).describe(), "2 threads (cgroup quota 4 CPUs / 2 ranks)");
  EXPECT_EQ(choose_blas_threads(0, {}, cpus(2, 4.0), 1).describe(), "2 threads (affinity 2 CPUs / 1 rank)");
}

TEST(BlasThreads, MoreThreadsThanUsableCpusAreReported) {
  // A bare srun on Slurm >= 22.05: SLURM_CPUS_PER_TASK says 4, the task may run on 1 CPU.
  const ThreadChoice c = choose_blas_threads(0, ThreadEnv{0, 0, 4}, cpus(1), 1);
  EXPECT_TRUE(c.oversubscribed());
  EXPECT_NE(c.describe().find("4 threads (SLURM_CPUS_PER_TASK); warning: this rank may run on 1 CPU only"),
            std::string::npos)
      << c.describe();
  EXPECT_FALSE(choose_blas_threads(0, {}, cpus(4), 1).oversubscribed());
  EXPECT_EQ(choose_blas_threads(1, {}, cpus(4), 1).describe(), "1 thread (--threads)");
}

TEST(BlasThreads, EnvironmentValuesAreChecked) {
  const ThreadEnv none = thread_env_from(env_of({}));
  EXPECT_EQ(none.openblas_num_threads, 0);
  EXPECT_EQ(none.omp_num_threads, 0);
  EXPECT_EQ(none.slurm_cpus_per_task, 0);
  const ThreadEnv set = thread_env_from(env_of({{"OPENBLAS_NUM_THREADS", "2"},
                                                {"OMP_NUM_THREADS", "4,2"},  // nested levels: the outer one
                                                {"SLURM_CPUS_PER_TASK", "8"}}));
  EXPECT_EQ(set.openblas_num_threads, 2);
  EXPECT_EQ(set.omp_num_threads, 4);
  EXPECT_EQ(set.slurm_cpus_per_task, 8);
  EXPECT_EQ(thread_env_from(env_of({{"OMP_NUM_THREADS", ""}})).omp_num_threads, 0);  // empty = unset
  for (const char* bad : {"abc", "0", "-1", "2x", "1.5", "100000"}) {
    for (const char* name : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK"}) {
      try {
        thread_env_from(env_of({{name, bad}}));
        ADD_FAILURE() << name << "=" << bad << " was accepted";
      } catch (const core::UsageError& e) {
        EXPECT_NE(std::string(e.what()).find(std::string(name) + "='" + bad + "' is not a thread count"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(BlasThreads, CgroupFiles) {
  EXPECT_DOUBLE_EQ(cgroup_v2_quota_cpus("150000 100000\n").value_or(-1), 1.5);
  EXPECT_DOUBLE_EQ(cgroup_v2_quota_cpus("200000 100000").value_or(-1), 2.0);
  EXPECT_FALSE(cgroup_v2_quota_cpus("max 100000\n"));
  EXPECT_FALSE(cgroup_v2_quota_cpus(""));
  EXPECT_FALSE(cgroup_v2_quota_cpus("garbage"));
  EXPECT_DOUBLE_EQ(cgroup_v1_quota_cpus("50000\n", "100000\n").value_or(-1), 0.5);
  EXPECT_FALSE(cgroup_v1_quota_cpus("-1\n", "100000\n"));
  EXPECT_FALSE(cgroup_v1_quota_cpus("100000", "0"));
}

// The facts of this process: whatever they are, the choice is at least one thread and at most the
// usable CPUs when nothing explicit is set.
TEST(BlasThreads, ThisProcess) {
  const CpuAllocation here = read_cpu_allocation();
  EXPECT_GE(here.online_cpus, 1);
  EXPECT_GE(here.usable_cpus(), 1);
  const ThreadChoice c = choose_blas_threads(0, {}, here, 1);
  EXPECT_GE(c.threads, 1);
  EXPECT_LE(c.threads, here.usable_cpus());
}

}  // namespace
}  // namespace microddp::app
