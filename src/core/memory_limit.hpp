// memory_limit.hpp — how much host memory this process may still allocate, from the limits a job
// meets on a shared node: the kernel's MemAvailable (/proc/meminfo), the cgroup's limit less its
// usage (cgroup v2 memory.max - memory.current, v1 memory.limit_in_bytes - memory.usage_in_bytes:
// what SLURM and containers enforce) and the address-space limit (`ulimit -v`, RLIMIT_AS, less
// this process's VmSize).
//
// Contract: a limit that cannot be read is "not known" (nullopt) and never limits; memory_budget()
// shares the node-wide limits (MemAvailable, cgroup) among the processes of the job on this node
// and takes the smallest, saying which limit binds. Used before large allocations (the trainer's
// buffers, app/model_memory.hpp) so that a size that cannot fit is refused with both numbers
// instead of failing in the allocator.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace microddp::core {

struct HostMemory {
  std::optional<std::int64_t> available_bytes;      // MemAvailable
  std::optional<std::int64_t> cgroup_free_bytes;    // the cgroup's limit less its usage
  std::optional<std::int64_t> address_space_bytes;  // RLIMIT_AS less VmSize (per process)
};

// Reads the limits of this process (each one that cannot be read is nullopt).
HostMemory host_memory();

struct MemoryBudget {
  std::optional<std::int64_t> bytes;  // nullopt: no limit could be read
  std::string limited_by;             // the binding limit in words, e.g. "MemAvailable 21.5 GiB shared by 2 ranks"
};

// What one of `sharers` (>= 1) processes on this node may allocate.
MemoryBudget memory_budget(const HostMemory& m, int sharers);

// "512 B", "3.0 KiB", "1.50 GiB", "8.00 PiB": bytes in the binary unit that reads best.
std::string format_bytes(double bytes);

// Parsers of the files read above, exposed for tests: nullopt when the text does not hold the value.
std::optional<std::int64_t> meminfo_available_bytes(const std::string& meminfo);  // "MemAvailable: N kB"
std::optional<std::int64_t> status_vmsize_bytes(const std::string& status);       // "VmSize: N kB"
// A cgroup limit file: a number of bytes, or "max" (v2) / a value near 2^63 (v1) meaning none.
std::optional<std::int64_t> cgroup_limit_bytes(const std::string& text);

}  // namespace microddp::core
