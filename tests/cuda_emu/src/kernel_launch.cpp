// kernel_launch.cpp — cuda_emu::device::launch (device_api.hpp): a kernel launch, checked on the
// host thread and executed block by block on the stream's worker thread.
// Contract (a <<<...>>> launch as the CUDA runtime documents it, plus the emulator's checks):
//  * refused synchronously, with the calling thread's last error set: a bad configuration (grid
//    or block dimensions out of CUDA's limits: cudaErrorInvalidConfiguration), dynamic shared
//    memory (not emulated: cudaErrorNotSupported), an invalid stream or one of another device
//    (cudaErrorInvalidResourceHandle), the runtime's start-up error or the device's sticky fault;
//  * a non-null pointer argument that is not memory of the launching device (or pinned host
//    memory) is what a GPU reports as an illegal address: the device faults at once (sticky
//    cudaErrorIllegalAddress, the kernel does not run);
//  * blocks run one after another in the schedule's order; CUDA_EMU_GRID_CAP caps gridDim.x, except
//    for the kernels named in CUDA_EMU_GRID_CAP_EXCLUDE;
//  * the first launch of a kernel runs every thread as a fiber and records whether any thread
//    synchronised; later launches of a kernel that never did run threads as plain calls (much
//    faster). A kernel that then does synchronise faults the launch and says so
//    (CUDA_EMU_PLAIN_KERNELS=0 runs every launch on fibers);
//  * on a capturing stream (graph.hpp) the launch, its arguments bound by value as at any launch,
//    becomes a kernel node; every graph launch checks its pointer arguments again (a buffer freed
//    since the capture faults the device as an illegal address) and runs it as a launch would.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "block_runner.hpp"
#include "config.hpp"
#include "counters.hpp"
#include "cuda_emu/device_api.hpp"
#include "devices.hpp"
#include "errors.hpp"
#include "graph.hpp"
#include "memory.hpp"
#include "streams.hpp"
#include "thread_order.hpp"

namespace cuda_emu {

namespace {

// What the emulator has learnt about one kernel.
struct KernelInfo {
  enum Mode : int { Unknown, Plain, Fibers };
  std::string name;
  bool cap_exempt = false;  // named in CUDA_EMU_GRID_CAP_EXCLUDE
  std::atomic<int> mode{Unknown};
};

KernelInfo& kernel_info(const void* id, const char* name) {
  static std::mutex mutex;
  static auto* kernels = new std::unordered_map<const void*, std::unique_ptr<KernelInfo>>();
  const std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*kernels)[id];
  if (slot == nullptr) {
    slot = std::make_unique<KernelInfo>();
    slot->name = name;
    const auto& exclude = config().grid_cap_exclude;
    slot->cap_exempt = std::find(exclude.begin(), exclude.end(), kernel_base_name(name)) != exclude.end();
  }
  return *slot;
}

// One launch as the worker executes it.
struct Launch {
  std::shared_ptr<const device::KernelBody> body;
  KernelInfo* info;
  int device;
  dim3 grid;
  dim3 block;
  Schedule schedule;
  std::uint64_t seed;
};

// CUDA's limits for compute capability 9.0 (CUDA C Programming Guide, "Technical
// Specifications per Compute Capability").
bool valid_configuration(dim3 grid, dim3 block) {
  constexpr unsigned kMaxThreadsPerBlock = 1024, kMaxBlockZ = 64, kMaxGridX = 2147483647u, kMaxGridYZ = 65535;
  if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0) return false;
  if (block.x > kMaxThreadsPerBlock || block.y > kMaxThreadsPerBlock || block.z > kMaxBlockZ) return false;
  if (static_cast<unsigned long long>(block.x) * block.y * block.z > kMaxThreadsPerBlock) return false;
  return grid.x <= kMaxGridX && grid.y <= kMaxGridYZ && grid.z <= kMaxGridYZ;
}

// Grids of more blocks run in forward order: their order vector would take 64 MiB (our launchers
// cap grids at 65536 blocks, kMaxGridStrideBlocks, so this never happens to them).
constexpr std::uint64_t kMaxShuffledBlocks = 1u << 24;

void execute(const Launch& l) {
  KernelInfo& info = *l.info;
  const bool fibers = !config().plain_kernels || info.mode.load() != KernelInfo::Plain;
  const unsigned threads = l.block.x * l.block.y * l.block.z;
  const std::uint64_t blocks = static_cast<std::uint64_t>(l.grid.x) * l.grid.y * l.grid.z;
  std::vector<unsigned> order;
  const bool ordered = blocks <= kMaxShuffledBlocks;
  if (ordered) make_order(order, static_cast<unsigned>(blocks), l.schedule, l.seed, mix(~0ull, blocks));
  gridDim = l.grid;
  blockDim = l.block;
  BlockRunner& runner = BlockRunner::for_this_thread();
  std::uint64_t calls = 0;
  std::uint64_t b = 0;
  try {
    for (; b < blocks; ++b) {
      const std::uint64_t linear = ordered ? order[b] : b;
      blockIdx = uint3{static_cast<unsigned>(linear % l.grid.x), static_cast<unsigned>((linear / l.grid.x) % l.grid.y),
                       static_cast<unsigned>(linear / (static_cast<std::uint64_t>(l.grid.x) * l.grid.y))};
      const BlockSpec spec{l.block, threads, l.schedule, l.seed, mix(linear, 0x5eed)};
      if (fibers) {
        calls += runner.run_fibers(*l.body, spec);
      } else {
        runner.run_plain(*l.body, spec);
      }
    }
  } catch (const PlainModeSync& e) {
    info.mode = KernelInfo::Fibers;
    std::ostringstream os;
    os << "kernel " << info.name << " called " << e.what() << " in block (" << blockIdx.x << "," << blockIdx.y << ","
       << blockIdx.z << "), but its first launch never synchronised, so the emulator runs it as plain calls without "
       << "fibers and cannot honour it; run with CUDA_EMU_PLAIN_KERNELS=0 (every kernel on fibers)";
    raise_fault(l.device, cudaErrorLaunchFailure, os.str());
  } catch (const KernelFault& f) {
    raise_fault(l.device, f.error, "kernel " + info.name + ": " + f.what());
  }
  counters::blocks(fibers, b);
  if (b == blocks && fibers && info.mode.load() == KernelInfo::Unknown) {
    info.mode = calls > 0 ? KernelInfo::Fibers : KernelInfo::Plain;
  }
}

// Memory a kernel on `device` can reach: its device memory, or pinned (mapped) host memory. A
// pointer one past the end of an allocation is accepted too (an empty range's end).
bool reachable(const void* p, int device) {
  PointerInfo info = Memory::get().lookup(p);
  if (info.kind == MemoryKind::Unregistered) info = Memory::get().lookup(static_cast<const char*>(p) - 1);
  return info.kind == MemoryKind::PinnedHost || (info.kind == MemoryKind::Device && info.device == device);
}

}  // namespace

namespace device {

void launch(const LaunchRequest& r, std::unique_ptr<KernelBody> body) {
  const auto refuse = [](cudaError_t e) { set_last_error(e); };
  if (Engine::on_worker_thread()) {
    std::fprintf(stderr, "cuda_emu: kernel %s launched from a stream worker: not permitted\n", r.kernel_name);
    return refuse(cudaErrorNotPermitted);
  }
  if (const cudaError_t e = runtime_status(); e != cudaSuccess) return refuse(e);
  const int device = current_device();
  if (const cudaError_t e = device_fault(device); e != cudaSuccess) return refuse(e);
  if (!valid_configuration(r.grid, r.block)) return refuse(cudaErrorInvalidConfiguration);
  if (r.shared_bytes != 0) {
    std::fprintf(stderr, "cuda_emu: kernel %s: dynamic shared memory is not emulated\n", r.kernel_name);
    return refuse(cudaErrorNotSupported);
  }
  CUstream_st* stream = Engine::get().resolve(r.stream, device);
  if (stream == nullptr || stream->device != device) return refuse(cudaErrorInvalidResourceHandle);
  bool capturing = false;
  if (const cudaError_t e = Captures::get().issue_check(stream, &capturing, r.kernel_name); e != cudaSuccess) {
    return refuse(e);
  }
  for (std::size_t i = 0; i < r.pointer_count; ++i) {
    const PointerArg& a = r.pointers[i];
    if (a.value == nullptr || reachable(a.value, device)) continue;
    const PointerInfo info = Memory::get().lookup(a.value);
    std::ostringstream os;
    os << "kernel " << r.kernel_name << ": argument " << a.index << " (" << a.value << ") is "
       << (info.kind == MemoryKind::Device ? "memory of device " + std::to_string(info.device)
                                           : std::string("not memory the device can reach (pageable host memory?)"))
       << "; on a GPU the kernel would fault with an illegal address";
    raise_fault(device, cudaErrorIllegalAddress, os.str());
    return refuse(cudaErrorIllegalAddress);
  }
  const Tuning& t = tuning();
  Launch l{std::shared_ptr<const KernelBody>(std::move(body)),
           &kernel_info(r.kernel_id, r.kernel_name),
           device,
           r.grid,
           r.block,
           t.schedule.load(),
           t.seed.load()};
  if (const unsigned cap = t.grid_cap.load(); cap > 0 && l.grid.x > cap && !l.info->cap_exempt) l.grid.x = cap;
  if (capturing) {
    NodeSpec node;
    node.work = NodeWork::Kernel;
    node.what = std::string("kernel ") + r.kernel_name;
    std::vector<PointerArg> pointers(r.pointers, r.pointers + r.pointer_count);
    node.prepare = [l, pointers, name = std::string(r.kernel_name)]() -> NodeRun {
      for (const PointerArg& a : pointers) {
        if (a.value != nullptr && !reachable(a.value, l.device)) {
          raise_fault(l.device, cudaErrorIllegalAddress,
                      "graph launch: kernel " + name + ": argument " + std::to_string(a.index) +
                          " points to memory freed since the capture; on a GPU the kernel would fault");
          return nullptr;
        }
      }
      return [l] { execute(l); };
    };
    if (const cudaError_t e = Captures::get().record(stream, std::move(node)); e != cudaSuccess) return refuse(e);
    return;
  }
  counters::kernel_launch();
  Engine::get().enqueue(stream, std::string("kernel ") + r.kernel_name, [l] { execute(l); });
}

}  // namespace device

}  // namespace cuda_emu
