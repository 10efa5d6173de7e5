// blas_threads.cpp — the BLAS thread count from the allocation (see blas_threads.hpp).
#include "app/blas_threads.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace microddp::app {

namespace {

// The whole of `text` as an integer in [1, 4096]; 0 for unset or empty. OMP_NUM_THREADS may be a
// list per nesting level ("4,2"): its first entry counts.
int parse_count(const char* name, const char* value, bool list_allowed) {
  if (value == nullptr || *value == '\0') return 0;
  std::string_view text(value);
  if (list_allowed) text = text.substr(0, text.find(','));
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  MDDP_USAGE_CHECK(ec == std::errc() && end == text.data() + text.size() && n >= 1 && n <= 4096,
                   name << "='" << value << "' is not a thread count (a whole number in [1, 4096])");
  return n;
}

// A whole number > 0 (cgroup files hold integers; "-1" and "max" mean no quota).
std::optional<double> parse_positive(std::string_view text) {
  long long n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n <= 0) return std::nullopt;
  return static_cast<double>(n);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The directories from `mount` + `path` up to `mount` (a limit on an ancestor applies too).
std::vector<std::string> dirs_to_root(const std::string& mount, std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path.back() == '/') path.pop_back();
  for (;;) {
    out.push_back(mount + path);
    if (path.empty()) break;
    path.erase(path.rfind('/'));
  }
  return out;
}

// The smallest CPU quota of this process's cgroups (v2 and v1 controllers alike); 0: none.
double cgroup_quota_cpus() {
  const std::optional<std::string> self = read_small_file("/proc/self/cgroup");
  if (!self) return 0.0;
  double best = 0.0;
  auto take = [&best](std::optional<double> q) {
    if (q && *q > 0 && (best == 0.0 || *q < best)) best = *q;
  };
  std::istringstream lines(*self);
  std::string line;
  while (std::getline(lines, line)) {
    // "hierarchy-id:controllers:path"; v2's line is "0::path".
    const std::size_t a = line.find(':'), b = line.find(':', a == std::string::npos ? 0 : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) {
      for (const std::string& dir : dirs_to_root("/sys/fs/cgroup", path)) {
        if (auto text = read_small_file(dir + "/cpu.max")) take(cgroup_v2_quota_cpus(*text));
      }
      continue;
    }
    const std::string padded = "," + controllers + ",";
    if (padded.find(",cpu,") == std::string::npos) continue;
    for (const std::string& mount : {"/sys/fs/cgroup/" + controllers, std::string("/sys/fs/cgroup/cpu")}) {
      for (const std::string& dir : dirs_to_root(mount, path)) {
        const auto quota = read_small_file(dir + "/cpu.cfs_quota_us");
        const auto period = read_small_file(dir + "/cpu.cfs_period_us");
        if (quota && period) take(cgroup_v1_quota_cpus(*quota, *period));
      }
    }
  }
  return best;
}

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

ThreadEnv thread_env_from(const core::EnvLookup& env) {
  ThreadEnv t;
  t.openblas_num_threads = parse_count("OPENBLAS_NUM_THREADS", env("OPENBLAS_NUM_THREADS"), false);
  t.omp_num_threads = parse_count("OMP_NUM_THREADS", env("OMP_NUM_THREADS"), true);
  t.slurm_cpus_per_task = parse_count("SLURM_CPUS_PER_TASK", env("SLURM_CPUS_PER_TASK"), false);
  return t;
}

std::optional<double> cgroup_v2_quota_cpus(std::string_view cpu_max) {
  cpu_max = trim(cpu_max);
  const std::size_t space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view quota = cpu_max.substr(0, space), period = trim(cpu_max.substr(space + 1));
  if (quota == "max") return std::nullopt;
  const auto q = parse_positive(quota), p = parse_positive(period);
  if (!q || !p) return std::nullopt;
  return *q / *p;
}

std::optional<double> cgroup_v1_quota_cpus(std::string_view quota_us, std::string_view period_us) {
  const auto q = parse_positive(trim(quota_us)), p = parse_positive(trim(period_us));  // -1: no quota
  if (!q || !p) return std::nullopt;
  return *q / *p;
}

int CpuAllocation::usable_cpus() const {
  int cpus = affinity_cpus > 0 ? affinity_cpus : std::max(1, online_cpus);
  // A quota of 1.5 CPUs keeps 1 thread busy without throttling; below 1 CPU, one thread still runs.
  if (quota_cpus > 0) cpus = std::min(cpus, std::max(1, static_cast<int>(std::floor(quota_cpus))));
  return std::max(1, cpus);
}

CpuAllocation read_cpu_allocation() {
  CpuAllocation a;
  a.online_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) a.affinity_cpus = CPU_COUNT(&set);
  a.quota_cpus = cgroup_quota_cpus();
  return a;
}

ThreadChoice choose_blas_threads(int threads_option, const ThreadEnv& env, const CpuAllocation& cpus, int local_ranks) {
  ThreadChoice c;
  c.usable_cpus = cpus.usable_cpus();
  if (threads_option > 0) {
    c.threads = threads_option;
    c.source = "--threads";
  } else if (env.openblas_num_threads > 0) {
    c.threads = env.openblas_num_threads;
    c.source = "OPENBLAS_NUM_THREADS";
  } else if (env.omp_num_threads > 0) {
    c.threads = env.omp_num_threads;
    c.source = "OMP_NUM_THREADS";
  } else if (env.slurm_cpus_per_task > 0) {
    c.threads = env.slurm_cpus_per_task;
    c.source = "SLURM_CPUS_PER_TASK";
  } else {
    const int ranks = std::max(1, local_ranks);
    c.threads = std::max(1, c.usable_cpus / ranks);
    std::ostringstream os;
    if (cpus.quota_cpus > 0 && c.usable_cpus < (cpus.affinity_cpus > 0 ? cpus.affinity_cpus : cpus.online_cpus)) {
      os << "cgroup quota " << cpus.quota_cpus << " CPUs";
    } else if (cpus.affinity_cpus > 0) {
      os << "affinity " << plural(cpus.affinity_cpus, "CPU", "CPUs");
    } else {
      os << plural(c.usable_cpus, "online CPU", "online CPUs");
    }
    os << " / " << plural(ranks, "rank", "ranks");
    c.source = os.str();
  }
  return c;
}

std::string ThreadChoice::describe() const {
  std::string s = plural(threads, "thread", "threads") + " (" + source + ")";
  if (oversubscribed()) {
    s += "; warning: this rank may run on " + plural(usable_cpus, "CPU", "CPUs") +
         " only (affinity, cgroup quota), which its threads time-share";
  }
  return s;
}

}  // namespace microddp::app
