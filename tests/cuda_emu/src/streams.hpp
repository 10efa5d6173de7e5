// streams.hpp — the emulated device's streams: every stream is a queue of operations executed in
// order, asynchronously, by its own worker thread, as a GPU executes a stream.
// Contract:
//  * An operation starts after the previous operation of its stream has completed, after its extra
//    dependencies (cudaStreamWaitEvent) have completed, and after CUDA_EMU_STREAM_DELAY_US; then it
//    runs on the worker and completes. Work queued on a device after it faulted is skipped.
//  * Legacy default stream (nullptr / cudaStreamLegacy, one per device, created on first use): an
//    operation on it also waits for all work queued so far on the device's blocking streams, and
//    an operation on a blocking stream also waits for all work queued so far on the legacy stream.
//    Streams created with cudaStreamNonBlocking take part in neither rule.
//  * A Completion is the "done" of one operation; waiting on it blocks the host thread (never call
//    wait from a worker: the API layer refuses CUDA calls there).
//  * A destroyed stream finishes its queued work, then its worker ends (cudaStreamDestroy returns at
//    once, as documented).
//  * An operation's `after` runs on the worker once it is over, also when a device fault skipped
//    its `run` (a graph launch completes its event records there, so no host waits forever).
//  * Stream capture (graph.hpp) lives beside the queue: a capturing stream records operations
//    into its capture instead of queueing them; the engine itself never sees captured work.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cuda_emu {

struct Completion {
  bool done = false;         // guarded by the engine's mutex
  std::int64_t done_ns = 0;  // steady clock at completion (event timing)
};
using CompletionPtr = std::shared_ptr<Completion>;

struct Operation {
  std::string what;                 // diagnostics ("kernel bias_grad_kernel", "cudaMemcpyAsync", ...)
  std::vector<CompletionPtr> deps;  // besides the stream's own order
  std::function<void()> run;        // empty for markers (event records, waits)
  std::function<void()> after;      // always, after run (or instead of it on a faulted device)
  CompletionPtr done;
};

struct Capture;  // graph.hpp

}  // namespace cuda_emu

// The runtime's opaque stream type (driver_types.h: typedef struct CUstream_st* cudaStream_t).
struct CUstream_st {
  int device = 0;
  bool legacy = false;
  bool blocking = true;
  int priority = 0;
  // Below: guarded by the engine's mutex.
  std::deque<cuda_emu::Operation> queue;
  cuda_emu::CompletionPtr tail;  // done of the last operation queued
  bool destroyed = false;
  std::condition_variable wake;
  // Below: guarded by the capture mutex (graph.hpp). The capture this stream records into (null:
  // none), and the nodes the next operation it records depends on.
  std::shared_ptr<cuda_emu::Capture> capture;
  std::vector<CUgraphNode_st*> capture_deps;
};

namespace cuda_emu {

class Engine {
 public:
  static Engine& get();

  // Creates a stream of visible device `device` with its worker.
  cudaStream_t create(int device, bool blocking, int priority);
  // cudaErrorInvalidResourceHandle for an unknown or legacy handle.
  cudaError_t destroy(cudaStream_t stream);
  // The stream a handle names, resolving nullptr / cudaStreamLegacy to the legacy stream of
  // `current_device`; nullptr if the handle is not a live stream (cudaStreamPerThread included).
  CUstream_st* resolve(cudaStream_t stream, int current_device);

  // Queues an operation; returns its completion.
  CompletionPtr enqueue(CUstream_st* stream, std::string what, std::function<void()> run,
                        std::vector<CompletionPtr> deps = {}, std::function<void()> after = nullptr);

  // Marks a completion made outside the queue done (a graph's event record node) and wakes waiters.
  void complete(const CompletionPtr& c);
  // Waits for `c` (null: nothing) without counting a host synchronisation: for stream workers (a
  // graph's event wait node), which may block as a kernel waiting on the device would.
  void await(const CompletionPtr& c);

  // Host waits. `what` is counted as one host synchronisation (counters.h).
  void wait(const CompletionPtr& c, const char* what);
  void wait_all(const std::vector<CompletionPtr>& cs, const char* what);
  bool is_done(const CompletionPtr& c);
  std::int64_t done_ns(const CompletionPtr& c);

  CompletionPtr tail(CUstream_st* stream);
  // Everything queued so far on visible device `device`, every stream (cudaDeviceSynchronize).
  std::vector<CompletionPtr> device_tails(int device);
  // What an operation queued now on `stream` would wait for under the legacy-stream rules.
  std::vector<CompletionPtr> implicit_deps(CUstream_st* stream);

  // True on a stream worker thread (kernels, host functions, copies run there).
  static bool on_worker_thread();

 private:
  Engine() = default;
  struct Device;
  Device& device_state(int device);  // callers hold mutex_
  std::vector<CompletionPtr> implicit_deps_locked(CUstream_st* stream);
  CUstream_st* legacy_locked(int device);
  std::shared_ptr<CUstream_st> start_locked(int device, bool legacy, bool blocking, int priority);
  void worker(std::shared_ptr<CUstream_st> stream);

  std::mutex mutex_;
  std::condition_variable completed_;  // notified whenever an operation completes
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<CUstream_st*> live_;  // handles cudaStreamCreate* returned and not destroyed
};

}  // namespace cuda_emu
