// memory_limit.cpp — /proc/meminfo, the cgroup files, RLIMIT_AS and /proc/self/status (see
// memory_limit.hpp).
#include "core/memory_limit.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace microddp::core {

namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// "Key:   N kB" in a /proc file, in bytes.
std::optional<std::int64_t> kb_field(const std::string& text, const std::string& key) {
  const std::size_t at = text.find(key + ":");
  if (at == std::string::npos || (at > 0 && text[at - 1] != '\n')) return std::nullopt;
  long long kb = 0;
  if (std::sscanf(text.c_str() + at + key.size() + 1, " %lld kB", &kb) != 1 || kb < 0) return std::nullopt;
  return static_cast<std::int64_t>(kb) * 1024;
}

// The cgroup directories of this process: its own (from /proc/self/cgroup) and the mount's root,
// which is where a container sees its own cgroup.
std::optional<std::int64_t> cgroup_free() {
  std::vector<std::pair<std::string, std::string>> candidates;  // (limit file, usage file)
  if (const auto self = read_text("/proc/self/cgroup")) {
    std::istringstream lines(*self);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("0::")) {
        const std::string dir = "/sys/fs/cgroup" + line.substr(3);
        candidates.emplace_back(dir + "/memory.max", dir + "/memory.current");
      } else if (const std::size_t m = line.find(":memory:"); m != std::string::npos) {
        const std::string dir = "/sys/fs/cgroup/memory" + line.substr(m + 8);
        candidates.emplace_back(dir + "/memory.limit_in_bytes", dir + "/memory.usage_in_bytes");
      }
    }
  }
  candidates.emplace_back("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current");
  candidates.emplace_back("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes");
  for (const auto& [limit_file, usage_file] : candidates) {
    const auto limit_text = read_text(limit_file);
    if (!limit_text) continue;
    const auto limit = cgroup_limit_bytes(*limit_text);
    if (!limit) return std::nullopt;  // the process's cgroup sets no limit
    const auto usage_text = read_text(usage_file);
    long long usage = 0;
    if (!usage_text || std::sscanf(usage_text->c_str(), "%lld", &usage) != 1) usage = 0;
    return std::max<std::int64_t>(0, *limit - usage);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::int64_t> meminfo_available_bytes(const std::string& meminfo) {
  return kb_field(meminfo, "MemAvailable");
}

std::optional<std::int64_t> status_vmsize_bytes(const std::string& status) { return kb_field(status, "VmSize"); }

std::optional<std::int64_t> cgroup_limit_bytes(const std::string& text) {
  if (text.starts_with("max")) return std::nullopt;
  long long v = 0;
  if (std::sscanf(text.c_str(), "%lld", &v) != 1 || v < 0) return std::nullopt;
  // cgroup v1 writes "no limit" as the largest page-aligned int64 (9223372036854771712).
  if (v >= (std::int64_t{1} << 62)) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

HostMemory host_memory() {
  HostMemory m;
  if (const auto meminfo = read_text("/proc/meminfo")) m.available_bytes = meminfo_available_bytes(*meminfo);
  m.cgroup_free_bytes = cgroup_free();
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const auto status = read_text("/proc/self/status");
    const std::int64_t used = status ? status_vmsize_bytes(*status).value_or(0) : 0;
    const std::int64_t limit = as.rlim_cur > static_cast<rlim_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(as.rlim_cur);
    m.address_space_bytes = std::max<std::int64_t>(0, limit - used);
  }
  return m;
}

MemoryBudget memory_budget(const HostMemory& m, int sharers) {
  sharers = std::max(sharers, 1);
  const std::string shared = sharers == 1 ? "" : " shared by " + std::to_string(sharers) + " ranks on this node";
  MemoryBudget b;
  auto consider = [&](const std::optional<std::int64_t>& limit, int share, const std::string& name) {
    if (!limit) return;
    const std::int64_t mine = *limit / share;
    if (b.bytes && *b.bytes <= mine) return;
    b.bytes = mine;
    b.limited_by = name + " " + format_bytes(static_cast<double>(*limit)) + (share == 1 ? "" : shared);
  };
  consider(m.available_bytes, sharers, "available memory (MemAvailable)");
  consider(m.cgroup_free_bytes, sharers, "the cgroup's memory limit less its usage");
  consider(m.address_space_bytes, 1, "the address-space limit (ulimit -v) less this process's size");
  return b;
}

std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  } else {
    std::snprintf(buf, sizeof buf, bytes < 10 ? "%.2f %s" : (bytes < 100 ? "%.1f %s" : "%.0f %s"), bytes, kUnits[u]);
  }
  return buf;
}

}  // namespace microddp::core
