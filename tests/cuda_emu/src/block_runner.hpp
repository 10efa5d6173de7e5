// block_runner.hpp — runs the threads of one block of a kernel, and implements the primitives they
// synchronise with (__syncthreads, the warp shuffles, __syncwarp: device_api.hpp).
// Contract:
//  * run_fibers: every thread is a fiber. Threads run one at a time, each until it finishes or
//    reaches a primitive, in the schedule's order (a new order per pass). When no thread can run:
//    a warp exchange completes once every lane its mask names waits at the same exchange with the
//    same mask (each lane then gets its source lane's value); a barrier opens once every thread of
//    the block waits at it. Anything else is a synchronisation bug and throws KernelFault naming
//    the threads: a lane of the mask exited or waits elsewhere, a thread exited while others wait
//    at a barrier, a mask without the calling lane or naming a lane that does not exist, a shuffle
//    reading a lane outside the mask, a width that is not a power of two in [1, 32].
//    A thread may also fault by itself (a misaligned atomic: device::atomic_access throws
//    KernelFault), with that fault's error.
//  * run_plain: the threads are plain calls, one after another (for kernels that never
//    synchronise). A primitive called there throws PlainModeSync (the launch then faults: the
//    emulator guessed wrong that the kernel never synchronises, and says so).
//  * Both return normally only when every thread has finished. One BlockRunner per worker thread
//    (for_this_thread); its fibers are kept for the next block.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "config.hpp"
#include "cuda_emu/device_api.hpp"
#include "fiber.hpp"

namespace cuda_emu {

struct KernelFault : std::runtime_error {
  KernelFault(cudaError_t e, const std::string& what) : std::runtime_error(what), error(e) {}
  cudaError_t error;
};

struct PlainModeSync : std::runtime_error {
  explicit PlainModeSync(const std::string& primitive) : std::runtime_error(primitive) {}
};

// One block to run; the index variables blockIdx / blockDim / gridDim are already set.
struct BlockSpec {
  dim3 block;
  unsigned thread_count;
  Schedule schedule;
  std::uint64_t seed;
  std::uint64_t salt;  // varies the shuffle from block to block
};

class BlockRunner {
 public:
  static BlockRunner& for_this_thread();

  // Returns the number of primitive calls the block's threads made.
  std::uint64_t run_fibers(const device::KernelBody& body, const BlockSpec& spec);
  void run_plain(const device::KernelBody& body, const BlockSpec& spec);

  // The primitives (device_api.hpp), for the thread running now.
  void sync_threads();
  std::uint64_t warp_exchange(device::WarpOp op, unsigned mask, std::uint64_t value, int arg, int width);

 private:
  enum class State : unsigned char { Runnable, AtBarrier, AtWarp, Done, Faulted };
  struct Request {
    device::WarpOp op;
    unsigned mask;
    int arg;
    int width;
    std::uint64_t value;
  };
  struct Thread {
    std::unique_ptr<Fiber> fiber;
    uint3 index{};
    unsigned linear = 0;
    State state = State::Runnable;
    Request request{};
    std::uint64_t result = 0;
    BlockRunner* runner = nullptr;
  };

  static void fiber_main(void* thread);
  void yield(Thread& t, State state);
  [[noreturn]] void fault_here(Thread& t, const std::string& message);
  bool complete_warp_exchanges();
  [[noreturn]] void diagnose_stall();
  std::string name(const Thread& t) const;
  static const char* primitive_name(device::WarpOp op);

  ExecutionContext scheduler_;
  std::vector<Thread> threads_;  // the pool; the first thread_count are the block's
  std::vector<unsigned> order_;
  std::vector<uint3> plain_ids_;
  unsigned count_ = 0;
  const device::KernelBody* body_ = nullptr;
  Thread* running_ = nullptr;
  std::uint64_t calls_ = 0;
  std::string fault_;
  cudaError_t fault_error_ = cudaErrorLaunchFailure;  // what a faulted thread reports (KernelFault's own)
};

}  // namespace cuda_emu
