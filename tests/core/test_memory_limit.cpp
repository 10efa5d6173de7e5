// test_memory_limit.cpp — core/memory_limit.hpp: the parsers of /proc/meminfo, /proc/self/status and
// the cgroup limit files; the budget takes the smallest limit, shares the node-wide ones among the
// ranks on the node and names the binding one; this process's limits are read (a `ulimit -v` set
// here shows up).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>

#include "core/memory_limit.hpp"

namespace microddp::core {
namespace {

TEST(MemoryLimit, Parsers) {
  EXPECT_EQ(meminfo_available_bytes("MemTotal:  100 kB\nMemFree:  50 kB\nMemAvailable:   2048 kB\n"), 2048 * 1024);
  EXPECT_FALSE(meminfo_available_bytes("MemTotal:  100 kB\n"));
  EXPECT_FALSE(meminfo_available_bytes("XMemAvailable: 5 kB\n"));
  EXPECT_EQ(status_vmsize_bytes("Name:\tx\nVmPeak:\t 9 kB\nVmSize:\t    12 kB\n"), 12 * 1024);
  EXPECT_EQ(cgroup_limit_bytes("1073741824\n"), std::int64_t{1} << 30);
  EXPECT_FALSE(cgroup_limit_bytes("max\n"));                  // cgroup v2: no limit
  EXPECT_FALSE(cgroup_limit_bytes("9223372036854771712\n"));  // cgroup v1: no limit
  EXPECT_FALSE(cgroup_limit_bytes("garbage"));
}

TEST(MemoryLimit, BudgetIsTheSmallestShare) {
  HostMemory m;
  EXPECT_FALSE(memory_budget(m, 1).bytes);  // nothing known: no limit
  m.available_bytes = std::int64_t{8} << 30;
  MemoryBudget b = memory_budget(m, 4);
  EXPECT_EQ(b.bytes, std::int64_t{2} << 30);
  EXPECT_NE(b.limited_by.find("(MemAvailable) 8.00 GiB shared by 4 ranks"), std::string::npos) << b.limited_by;
  m.cgroup_free_bytes = std::int64_t{4} << 30;
  b = memory_budget(m, 4);
  EXPECT_EQ(b.bytes, std::int64_t{1} << 30);
  EXPECT_NE(b.limited_by.find("cgroup"), std::string::npos) << b.limited_by;
  m.address_space_bytes = std::int64_t{512} << 20;  // per process: not shared
  b = memory_budget(m, 4);
  EXPECT_EQ(b.bytes, std::int64_t{512} << 20);
  EXPECT_NE(b.limited_by.find("ulimit -v"), std::string::npos) << b.limited_by;
}

TEST(MemoryLimit, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(40.0 * (1 << 30)), "40.0 GiB");
  EXPECT_EQ(format_bytes(256.0 * (1 << 30)), "256 GiB");
  EXPECT_EQ(format_bytes(9.2e18), "7.98 EiB");
}

// ASan and TSan reserve terabytes of address space for their shadow memory, so under them a 64 GiB
// RLIMIT_AS makes the sanitizer's own next mapping fail: the test means something only without them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MDDP_TEST_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MDDP_TEST_UNDER_SANITIZER 1
#endif
#endif

TEST(MemoryLimit, ReadsThisProcesssAddressSpaceLimit) {
#ifdef MDDP_TEST_UNDER_SANITIZER
  GTEST_SKIP() << "an address-space limit cannot be set under ASan/TSan (their shadow memory)";
#endif
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &saved), 0);
  EXPECT_TRUE(host_memory().available_bytes);  // Linux always has MemAvailable
  rlimit as = saved;
  as.rlim_cur = std::min<rlim_t>(saved.rlim_max, rlim_t{64} << 30);
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &as), 0);
  const HostMemory m = host_memory();
  ::setrlimit(RLIMIT_AS, &saved);
  ASSERT_TRUE(m.address_space_bytes);
  EXPECT_LT(*m.address_space_bytes, std::int64_t{64} << 30);  // less what this process already maps
}

}  // namespace
}  // namespace microddp::core
