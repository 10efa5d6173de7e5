// ops.cpp — the CPU behaviour of Ops's queued calls (host staging memory, time stamps) and of its CUDA
// graph calls (none: the CPU runs every call at once); CudaOps overrides them with pinned memory,
// async copies, CUDA events and graphs.
#include "kernels/ops.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/aligned_alloc.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "kernels/optimizer_kernels.hpp"

namespace microddp::kernels {

namespace {
constexpr std::size_t kHostStagingAlign = 64;  // a cache line: no false sharing with neighbours
}

void* Ops::allocate_host_bytes(std::size_t bytes) {
  return core::aligned_zeroed_alloc(bytes, kHostStagingAlign, "allocate_host_bytes");
}

void Ops::free_host_bytes(void* p) noexcept { std::free(p); }

void Ops::upload_async(int slot, void* dst, const void* src, std::size_t bytes) {
  MDDP_CHECK(slot >= 0 && slot < kUploadSlots, "upload slot " << slot << " out of range [0, " << kUploadSlots << ")");
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

std::unique_ptr<OptimizerKernels> Ops::make_optimizer_kernels() { return make_cpu_optimizer_kernels(*this); }

std::uint32_t Ops::mark() {
  const std::uint32_t id = next_mark_++ % kMarkSlots;
  host_marks_[id] = core::now_ns();
  return id;
}

std::int64_t Ops::mark_ns(std::uint32_t id) const {
  MDDP_CHECK(id < kMarkSlots, "mark id " << id << " out of range");
  return host_marks_[id];
}

// CUDA graphs: the CPU runs every call when it is made, there is nothing to record.
namespace {
[[noreturn]] void no_graphs(const Ops& ops, const char* what) {
  core::throw_error(std::string(what) + ": " + ops.description() +
                        " runs every call at once and has no CUDA graphs (ask supports_graphs() first)",
                    "supports_graphs()", __FILE__, __LINE__);
}
}  // namespace

void Ops::begin_capture() { no_graphs(*this, "begin_capture"); }
Ops::GraphId Ops::end_capture() { no_graphs(*this, "end_capture"); }
void Ops::launch_graph(GraphId /*graph*/) { no_graphs(*this, "launch_graph"); }

}  // namespace microddp::kernels
