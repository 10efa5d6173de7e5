// nccl_backend.hpp — the `nccl` backend (NCCL collectives on a dedicated CUDA stream) and the
// `nccl-ring` backend (gpu_ring_backend.cpp: our ring all-reduce over NCCL send/recv), both
// StreamBackends (backend.hpp). Built only with MICRODDP_NCCL=ON; the factory is the only caller that
// names them. Plain C++ header: NCCL and CUDA handles are forward-declared exactly as their headers
// define them.
//
// Contract (beyond backend.hpp and communicator.hpp):
//   * One GPU per rank (nccl_setup.hpp picks it from the node-local rank); the unique id travels from
//     rank 0 over MPI (checked message, nccl_setup.hpp); construction is collective over `parent`.
//   * Direct dispatch (dispatcher.hpp): a collective is enqueued on the communication stream on the
//     caller's thread and returns; the host never waits for the GPU to launch one. Before it, the
//     communication stream waits (cudaStreamWaitEvent, a GPU-side wait) for the work queued so far on
//     the compute stream (set_compute_stream(); default: the legacy default stream), so it reads
//     finished gradients. Completion is a CUDA event per collective (this class is the WorkSource).
//   * Device buffers (Device::Cuda, memory of this rank's GPU: checked with cudaPointerGetAttributes)
//     are the fast path, async in Mode::Async. Host buffers are staged through device memory
//     (staging_plan.hpp) and the call completes before it returns, in either mode: correct, never
//     overlapped; meant for tests and host-resident models. Staging buffers only grow (the step
//     allocates nothing after its first occurrence).
//   * Mean is Sum followed by scaling with fl(1/n) on the GPU, like the host backends (not ncclAvg,
//     which pre-multiplies each input and so rounds differently).
//   * Errors: a failing NCCL/CUDA call, an asynchronous NCCL error (polled with ncclCommGetAsyncError
//     while waiting) or no completion within the timeout (CommConfig::nccl_timeout_s, i.e.
//     MICRODDP_NCCL_TIMEOUT_S, default 600 s, 0 = none; --comm-timeout replaces it through
//     set_timeout) aborts the communicator (ncclCommAbort): that Work and every later one fail with
//     the message, and new collectives throw. Not thread-safe: one thread issues and waits.
//   * The host never blocks in the CUDA runtime on a stream that may hold NCCL work: a collective whose
//     peer died or hangs never completes (NCCL's kernels wait until ncclCommAbort). Work::wait() polls
//     the collective's event; wait_for_stream() polls an event recorded on the compute stream (which
//     waits for collectives after order_compute_after, or replays captured ones in a CUDA graph);
//     both watch the asynchronous error and the timeout, and abort on either.
//   * Teardown (finish_for_teardown, also run by the destructor) never waits forever: it waits until
//     both the communication stream and the compute stream are idle (the latter holds the replays of
//     a graph's captured collectives), up to the timeout — with no timeout (--comm-timeout 0), up to
//     the teardown grace (kNcclTeardownGraceS, set_teardown_grace) — and not at all while an
//     exception is unwinding (this rank is failing: its peers may never join what it launched); if
//     they are not idle by then, the communicator is aborted (ncclCommAbort) with a warning instead of
//     destroyed (ncclCommDestroy would wait for the hung work). The compute stream given to
//     set_compute_stream must outlive the backend.
//   * CUDA graphs: a collective launched while the compute stream captures becomes part of the graph;
//     device scratch a captured collective used is never freed while the backend lives (growth
//     allocates anew and keeps the old buffer for the graph's replays), and growing it during a
//     capture is refused. capture_obstacle() names an NCCL too old to be captured (< 2.9.6).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "comm/backend.hpp"
#include "comm/comm_config.hpp"
#include "comm/runtime/mpi_runtime.hpp"

struct ncclComm;
typedef struct ncclComm* ncclComm_t;
struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;
struct CUevent_st;
typedef struct CUevent_st* cudaEvent_t;

namespace microddp::comm {

// How long a teardown waits for pending collectives when there is no timeout: far beyond any healthy
// collective (docs/reliability.md: a 256 MiB all-reduce takes under 2 s here).
inline constexpr double kNcclTeardownGraceS = 30.0;

class NcclBackend : public StreamBackend, private WorkSource {
 public:
  // Collective over `parent`; `device` is this rank's GPU; `timeout_s`: how long a wait lets one
  // collective run before aborting the communicator (0: forever).
  NcclBackend(MPI_Comm parent, int device, double timeout_s);
  ~NcclBackend() override;
  std::string_view name() const override { return "nccl"; }

  Work launch(const CollectiveCall& call, Mode mode) override;
  void wait_launched() override;
  // --comm-timeout replaces the timeout given at construction.
  void set_timeout(double seconds) override;
  void finish_for_teardown() noexcept override;
  // How long a teardown without a timeout waits for pending collectives (default kNcclTeardownGraceS).
  void set_teardown_grace(double seconds);
  // Later collectives are ordered after the work queued so far on `stream` (a cudaStream_t of this
  // rank's GPU, e.g. Ops::stream(); the null stream = the legacy default stream).
  void set_compute_stream(core::DeviceStream stream) override;
  void order_compute_after(const Work& work) override;
  void wait_for_stream(core::DeviceStream stream) override;
  // NCCL before 2.9.6 cannot be captured (nccl_setup.hpp's nccl_capture_obstacle).
  std::string capture_obstacle() const override;

  int device() const;
  // The communication stream (e.g. for a compute stream to wait on, or for profiling).
  // NCCL's version code (e.g. 22809 for 2.28.9) and the GPU in words, for run headers.
  static int nccl_version();
  std::string description() const;

 protected:
  // The all-reduce on device pointers, enqueued on comm_stream_handle(); the ring backend overrides it.
  // op is never Mean here (Sum, then the caller scales).
  virtual void enqueue_all_reduce(const core::TensorView& send, const core::TensorView& recv, ReduceOp op);

  ncclComm_t nccl_comm() const;
  cudaStream_t comm_stream_handle() const;
  // Device scratch of at least `bytes`, stream-ordered on the communication stream, grown only.
  void* device_scratch(std::int64_t bytes);

 private:
  bool is_complete(std::uint64_t seq) override;
  void wait_for(std::uint64_t seq) override;
  std::int64_t completion_ns(std::uint64_t seq) override;
  std::int64_t start_ns(std::uint64_t seq) override;

  void enqueue_device(const CollectiveCall& call);  // every pointer it uses is device memory
  void check_device_pointers(const CollectiveCall& call) const;
  void poll_async_error(std::uint64_t seq);
  // Polls `count` recorded events until all completed (true), or until the communicator reports an
  // asynchronous error or a CUDA error (false, `why` says which) or `limit_s` passed (false, `why`
  // empty; limit_s < 0: no limit). Never blocks in the CUDA runtime.
  bool poll_until_done(const cudaEvent_t* events, std::size_t count, double limit_s, std::string& why);
  // Records the first failure, aborts the NCCL communicator; does not throw (callers do).
  void mark_failed(const std::string& what);

  struct State;
  std::unique_ptr<State> s_;
};

// The GPU of this rank for the NCCL backends: its node-local rank modulo the visible GPUs
// (nccl_setup.hpp). Collective over the world: ranks compare GPU UUIDs (gpu_sharing.hpp) and every
// rank throws core::UsageError (agreed) when two ranks would share a GPU, which NCCL refuses.
int nccl_rank_device(const MpiRuntime& runtime);

// The factory's entry points: one GPU per rank (nccl_rank_device), timeout from the config.
std::unique_ptr<StreamBackend> make_nccl_backend(const MpiRuntime& runtime, const CommConfig& config);
std::unique_ptr<StreamBackend> make_gpu_ring_backend(const MpiRuntime& runtime, const CommConfig& config);

}  // namespace microddp::comm
