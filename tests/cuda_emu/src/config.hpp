// config.hpp — the emulator's settings, read once from the environment (docs/cuda_emu.md lists them).
// Contract: config() parses on first use, thread-safely; a malformed value prints what is wrong and
// aborts the process (a test run with a misspelt setting must not quietly test something else).
// CUDA_EMU_REPORT=1 prints the counters (counters.hpp) at exit.
// The knobs that tests may change while running (schedule, grid cap, stream delay) are atomics in
// Tuning; the rest is fixed for the life of the process.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cuda_emu {

// Order in which the threads of a block (and the blocks of a grid) run between synchronisations.
enum class Schedule : int { Forward, Reverse, Shuffle };

// How a fiber switch is done: a few instructions of x86-64 assembly, or the portable ucontext
// (swapcontext also saves the signal mask: a system call per switch, ~50x slower).
enum class ContextSwitch : int { Assembly, Ucontext };

struct Config {
  int node_gpus = 1;                     // CUDA_EMU_NODE_GPUS: physical GPUs of the emulated node
  std::vector<int> visible;              // physical index of each visible device (CUDA_VISIBLE_DEVICES)
  cudaError_t init_error = cudaSuccess;  // CUDA_EMU_FAIL_INIT: every call fails with this
  // cudaDriverGetVersion's answer: 13000 (CUDA 13.0), or CUDA_EMU_DRIVER_VERSION (0 = no driver
  // installed, e.g. 12040 = an installed driver older than the runtime; with
  // CUDA_EMU_FAIL_INIT=insufficient-driver these are the two cases a machine can be in).
  int driver_version = 13000;
  std::size_t device_memory_bytes = 0;  // CUDA_EMU_DEVICE_MEMORY_MB per device
  bool plain_kernels = true;            // CUDA_EMU_PLAIN_KERNELS: kernels without sync run without fibers
  ContextSwitch context_switch = ContextSwitch::Assembly;  // CUDA_EMU_CONTEXT_SWITCH
  std::size_t fiber_stack_bytes = 0;                       // CUDA_EMU_FIBER_STACK_KB
  // CUDA_EMU_GRID_CAP_EXCLUDE: kernels (names as launched, template arguments dropped) the grid cap
  // must not touch because their result depends on the grid size.
  std::vector<std::string> grid_cap_exclude;
};

// The kernel name the exclusion list matches: `name` up to its template argument list.
std::string kernel_base_name(const std::string& name);

const Config& config();

struct Tuning {
  std::atomic<Schedule> schedule{Schedule::Shuffle};  // CUDA_EMU_SCHEDULE
  std::atomic<std::uint64_t> seed{0};                 // CUDA_EMU_SCHEDULE=shuffle:SEED
  std::atomic<unsigned> grid_cap{0};                  // CUDA_EMU_GRID_CAP (0 = none)
  std::atomic<unsigned> stream_delay_us{0};           // CUDA_EMU_STREAM_DELAY_US
};

Tuning& tuning();

// Parses "forward" | "reverse" | "shuffle" | "shuffle:SEED" into `tuning`; false if malformed.
bool parse_schedule(const std::string& spec, Tuning& tuning);

// The physical devices CUDA_VISIBLE_DEVICES selects out of `node_gpus`, as the CUDA runtime reads
// it: unset = all; empty = none; otherwise comma-separated indices, and the list ends at the first
// entry that is not a valid, new index (the entries before it stay visible).
std::vector<int> parse_visible_devices(const char* env, int node_gpus);

}  // namespace cuda_emu
