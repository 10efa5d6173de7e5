// nccl_backend.cpp — the `nccl` backend (see nccl_backend.hpp for the contract).
//
// How a collective runs (all on the caller's thread, nothing blocks the host in Mode::Async):
//   1. cudaEventRecord(compute_ready, compute stream); cudaStreamWaitEvent(comm stream, compute_ready):
//      the communication stream waits, on the GPU, for the gradients queued so far.
//   2. The NCCL call(s) on the communication stream (scatter/gather: ncclSend/ncclRecv in one group).
//   3. cudaEventRecord(done[seq % kSlots]): Work::test() is cudaEventQuery on it; wait() polls it
//      together with ncclCommGetAsyncError and the timeout, and aborts the communicator on failure.
//      The event is a timing event: Work::completion_ns() is its time on the host clock
//      (kernels::DeviceClock, anchored whenever the stream is known idle), so completion times cost
//      no host callback (a cudaLaunchHostFunc per collective would cost a host round trip each).
//      Before the NCCL call (after the wait of step 1) a second timing event, started[seq % kSlots],
//      is recorded: Work::start_ns() is its host time, the moment the communication stream REACHED
//      the collective (earlier collectives done and the gradients it reads finished). That is the
//      best start of execution a stream-ordered library exposes without a host callback: the kernel
//      may still wait on the GPU for its peers, which counts as execution, as the MPI thread's
//      blocking call does on the host backends.
//   order_compute_after(work): cudaStreamWaitEvent(compute stream, done[work]): the compute stream,
//   not the host, waits for the collective (a GPU step then synchronises once, docs/gpu.md).
// The communication stream has the highest stream priority, so NCCL's kernels are scheduled ahead of
// queued compute kernels (backward) once their inputs are ready.
#include "comm/gpu/nccl_backend.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <exception>
#include <sstream>
#include <thread>
#include <vector>

#include "comm/gpu/gpu_comm_kernels.hpp"
#include "comm/gpu/gpu_sharing.hpp"
#include "comm/transport/mpi_check.hpp"
#include "comm/transport/mpi_comm_size.hpp"
#include "comm/gpu/nccl_check.hpp"
#include "comm/gpu/nccl_setup.hpp"
#include "comm/gpu/pinned_host_buffer.hpp"
#include "comm/gpu/staging_plan.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/device_clock.hpp"

namespace microddp::comm {

using core::TensorView;

static_assert(sizeof(ncclUniqueId) == kNcclUniqueIdBytes, "NCCL_UNIQUE_ID_BYTES changed: update nccl_setup.hpp");

namespace {

// Completion slots: a Work can be tested while up to kSlots - 1 later collectives are in flight; the
// kSlots-th later launch waits for it first (a DDP step issues a few dozen collectives at most).
constexpr std::size_t kSlots = 1024;
// Wait loop: yield this many times (sub-microsecond re-checks for short collectives), then sleep
// kPollSleep between polls so a long wait does not burn the core the BLAS/compute threads need.
constexpr int kYieldPolls = 64;
constexpr auto kPollSleep = std::chrono::microseconds(20);
// Waits for a stream (poll_until_done) yield for this long before they sleep: a small model's whole
// GPU step is well under it, and a sleep's wake-up (timer slack: tens of microseconds) would add a
// visible share to such a step; cudaStreamSynchronize, which the wait replaces, spins too.
constexpr std::int64_t kYieldWindowNs = 2'000'000;

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
    case ReduceOp::Mean:
      break;  // Sum + scale, see the header
  }
  MDDP_CHECK(false, "nccl: Mean must be lowered to Sum before reaching NCCL");
  return ncclSum;
}

std::size_t to_size(std::int64_t n) { return static_cast<std::size_t>(n); }

// Sets the calling thread's current device for a scope (streams, events and kernels of our GPU need
// it current) and restores the caller's choice afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : device_(device) {
    MDDP_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device_) MDDP_CUDA_CHECK(cudaSetDevice(device_));
  }
  ~DeviceGuard() {
    if (previous_ != device_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int device_;
  int previous_ = 0;
};

}  // namespace

struct NcclBackend::State {
  // A grow-only buffer in device memory (stream-ordered on the communication stream: no device-wide
  // synchronisation when it grows); its host counterpart is PinnedHostBuffer. Nested here, not in the
  // anonymous namespace: State has external linkage, and a member of an anonymous-namespace type
  // warns (-Wsubobject-linkage) when this file is compiled inside a unity build.
  // A CUDA graph records the pointer it used: once a collective captured into a graph has used the
  // buffer, growing it keeps the old one alive (retired, freed with the backend) instead of freeing
  // it, so every later replay still reads and writes valid memory of the size it was captured with
  // (as PyTorch keeps a graph's memory pool until the graph goes). Growing during a capture is
  // refused: a stream-ordered allocation cannot be recorded, and the eager warm-up step sizes it.
  struct DeviceBuffer {
    void* p = nullptr;
    std::int64_t bytes = 0;
    bool captured = false;       // a graph holds p
    std::vector<void*> retired;  // earlier buffers graphs may still use
    void* ensure(std::int64_t want, cudaStream_t stream, bool capturing) {
      if (want > bytes) {
        MDDP_CHECK(!capturing, "nccl: a device scratch buffer must grow to "
                                   << want << " bytes while the compute stream is captured into a CUDA graph "
                                   << "(a stream-ordered allocation cannot be recorded); an eager collective of the "
                                      "same size before the capture sizes it");
        if (p != nullptr) {
          if (captured) {
            retired.push_back(p);
          } else {
            MDDP_CUDA_CHECK(cudaFreeAsync(p, stream));
          }
        }
        p = nullptr;
        bytes = 0;
        captured = false;
        MDDP_CUDA_CHECK(cudaMallocAsync(&p, to_size(want), stream));
        bytes = want;
      }
      captured = captured || capturing;
      return p;
    }
    void release() noexcept {
      if (p != nullptr) (void)cudaFree(p);
      for (void* r : retired) (void)cudaFree(r);
      p = nullptr;
      retired.clear();
    }
  };

  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;   // communication stream
  cudaStream_t compute = nullptr;  // set_compute_stream(); nullptr = legacy default stream
  cudaEvent_t compute_ready = nullptr;
  std::vector<cudaEvent_t> done = std::vector<cudaEvent_t>(kSlots, nullptr);
  std::vector<cudaEvent_t> started = std::vector<cudaEvent_t>(kSlots, nullptr);  // start of execution (timing)
  std::vector<std::uint64_t> slot_seq = std::vector<std::uint64_t>(kSlots, 0);   // 0: slot never used
  std::vector<CollectiveKind> slot_kind = std::vector<CollectiveKind>(kSlots, CollectiveKind::Barrier);
  // Per slot: launched while the compute stream was being captured into a CUDA graph. Its events
  // were recorded into the capture, not on the device: CUDA refuses to query them (the graph's
  // replays run the collective, each time the graph is launched), so it counts as complete at once.
  std::vector<char> slot_captured = std::vector<char>(kSlots, 0);
  std::unique_ptr<kernels::DeviceClock> clock;  // done events -> host times (after cudaSetDevice)
  std::uint64_t launched = 0;                   // last seq enqueued
  std::uint64_t completed = 0;                  // every seq <= completed is known complete (one stream: FIFO)
  bool failed = false;
  std::uint64_t failed_seq = 0;  // first seq that did not complete successfully
  std::string error;
  double timeout_s = kDefaultNcclTimeoutS;
  double teardown_grace_s = kNcclTeardownGraceS;
  int* barrier_word = nullptr;  // one device int, always 0: the barrier is a 1-element max-all-reduce
  // Host waits on a stream without blocking in it (wait_for_stream, teardown): recorded, then polled.
  std::array<cudaEvent_t, 2> idle = {nullptr, nullptr};
  bool capturing = false;     // the collective being launched is captured into a graph (launch())
  DeviceBuffer scratch;       // the GPU ring's receive block
  DeviceBuffer dev_stage[2];  // host-buffer staging (staging_plan.hpp regions)
  PinnedHostBuffer host_stage[2];

  // No throwing (destructor path, also after a failed constructor): errors here have nowhere to go.
  // The communicator is destroyed only healthy and idle (finish_for_teardown aborted it otherwise):
  // ncclCommDestroy and the stream synchronisation below then return at once.
  ~State() {
    if (cudaSetDevice(device) != cudaSuccess) return;
    if (stream != nullptr) (void)cudaStreamSynchronize(stream);
    if (comm != nullptr) (void)ncclCommDestroy(comm);
    for (DeviceBuffer* b : {&scratch, &dev_stage[0], &dev_stage[1]}) b->release();
    if (barrier_word != nullptr) (void)cudaFree(barrier_word);
    for (cudaEvent_t e : idle) {
      if (e != nullptr) (void)cudaEventDestroy(e);
    }
    for (const auto* events : {&done, &started}) {
      for (cudaEvent_t e : *events) {
        if (e != nullptr) (void)cudaEventDestroy(e);
      }
    }
    if (compute_ready != nullptr) (void)cudaEventDestroy(compute_ready);
    clock.reset();
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
};

NcclBackend::NcclBackend(MPI_Comm parent, int device, double timeout_s)
    : StreamBackend(mpi_comm_rank(parent), mpi_comm_size(parent)), s_(std::make_unique<State>()) {
  State& s = *s_;
  s.device = device;
  s.timeout_s = timeout_s > 0.0 ? timeout_s : 0.0;
  MDDP_CUDA_CHECK(cudaSetDevice(device));

  // Rank 0 creates the id; everyone checks the message before NCCL sees it (nccl_setup.hpp).
  int version = 0;
  MDDP_NCCL_CHECK(ncclGetVersion(&version));
  UniqueIdMessage msg;
  if (rank() == 0) {
    ncclUniqueId id;
    MDDP_NCCL_CHECK(ncclGetUniqueId(&id));
    msg = make_unique_id_message(id.internal, size(), version);
  }
  static_assert(std::is_trivially_copyable_v<UniqueIdMessage>);
  MDDP_MPI_CHECK(MPI_Bcast(&msg, static_cast<int>(sizeof msg), MPI_BYTE, 0, parent));
  check_unique_id_message(msg, size(), version);
  ncclUniqueId id;
  std::memcpy(id.internal, msg.id.data(), kNcclUniqueIdBytes);

  int least = 0, greatest = 0;  // CUDA priorities: numerically lower = higher priority
  MDDP_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  MDDP_CUDA_CHECK(cudaStreamCreateWithPriority(&s.stream, cudaStreamNonBlocking, greatest));
  MDDP_CUDA_CHECK(cudaEventCreateWithFlags(&s.compute_ready, cudaEventDisableTiming));
  for (cudaEvent_t& e : s.idle) MDDP_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  // With timing: completion_ns() and start_ns() convert them to host times.
  for (cudaEvent_t& e : s.done) MDDP_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault));
  for (cudaEvent_t& e : s.started) MDDP_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault));
  s.clock = std::make_unique<kernels::DeviceClock>();
  MDDP_CUDA_CHECK(cudaMalloc(&s.barrier_word, sizeof(int)));
  MDDP_CUDA_CHECK(cudaMemset(s.barrier_word, 0, sizeof(int)));
  MDDP_CUDA_CHECK(cudaDeviceSynchronize());  // the memset (legacy stream) lands before our stream reads it
  s.clock->anchor(s.stream);                 // the stream is idle
  MDDP_NCCL_CHECK(ncclCommInitRank(&s.comm, size(), id, rank()));
}

// The communicator's dispatcher has finished every launched collective (dispatcher.hpp); for a
// backend destroyed on its own, finish_for_teardown does it here. State's destructor then releases
// the stream, the NCCL communicator and the buffers.
NcclBackend::~NcclBackend() { finish_for_teardown(); }

void NcclBackend::finish_for_teardown() noexcept {
  State& s = *s_;
  if (s.failed || s.comm == nullptr || s.launched == 0) return;
  try {
    DeviceGuard guard(s.device);
    // An exception on its way out means this rank is failing: its peers may never join what it launched.
    const bool unwinding = std::uncaught_exceptions() > 0;
    const double limit_s = unwinding ? 0.0 : s.timeout_s > 0.0 ? s.timeout_s : s.teardown_grace_s;
    // Idle means both streams: the communication stream runs the eager collectives, the compute
    // stream the replays of a CUDA graph with captured ones (whose Work counts as complete at once).
    // A compute stream still capturing (a capture aborted by an exception) has nothing to wait for.
    MDDP_CUDA_CHECK(cudaEventRecord(s.idle[0], s.stream));
    std::size_t pending = 1;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (s.compute == nullptr ||
        (cudaStreamIsCapturing(s.compute, &capture) == cudaSuccess && capture == cudaStreamCaptureStatusNone)) {
      MDDP_CUDA_CHECK(cudaEventRecord(s.idle[1], s.compute));
      pending = 2;
    }
    (void)cudaGetLastError();
    std::string why;
    if (!poll_until_done(s.idle.data(), pending, limit_s, why)) {
      if (why.empty()) {
        const std::uint64_t last = s.launched;
        std::ostringstream os;
        os << "teardown with work pending on the GPU (collectives up to " << collective_name(s.slot_kind[last % kSlots])
           << " #" << last << ", eager or replayed in a CUDA graph) ";
        if (unwinding) {
          os << "while an exception unwinds";
        } else {
          os << "after " << limit_s << " s (" << (s.timeout_s > 0.0 ? "--comm-timeout" : "no --comm-timeout") << ")";
        }
        why = os.str();
      }
      mark_failed(why);
      MDDP_WARN(name() << ": " << s.error << " instead of waiting forever");
    }
  } catch (const std::exception&) {  // a teardown has nowhere to report to
  }
}

bool NcclBackend::poll_until_done(const cudaEvent_t* events, std::size_t count, double limit_s, std::string& why) {
  State& s = *s_;
  const std::int64_t start = core::now_ns();
  for (int polls = 0;; ++polls) {
    bool done = true;
    for (std::size_t i = 0; i < count; ++i) {
      const cudaError_t q = cudaEventQuery(events[i]);
      if (q == cudaErrorNotReady) {
        (void)cudaGetLastError();  // a status kept as the last error (see is_complete)
        done = false;
      } else if (q != cudaSuccess) {
        why = std::string("CUDA error ") + cudaGetErrorName(q) + ": " + cudaGetErrorString(q);
        return false;
      }
    }
    if (done) return true;
    if (s.comm != nullptr) {
      ncclResult_t async = ncclSuccess;
      const ncclResult_t rc = ncclCommGetAsyncError(s.comm, &async);
      if (rc != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        const char* last = ncclGetLastError(s.comm);
        why = std::string("NCCL asynchronous error: ") + ncclGetErrorString(rc != ncclSuccess ? rc : async) +
              (last != nullptr && *last != '\0' ? std::string(" (") + last + ")" : std::string());
        return false;
      }
    }
    const std::int64_t waited_ns = core::now_ns() - start;
    if (limit_s >= 0.0 && static_cast<double>(waited_ns) * 1e-9 >= limit_s) return false;
    if (polls < kYieldPolls || waited_ns < kYieldWindowNs) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollSleep);
    }
  }
}

void NcclBackend::wait_for_stream(core::DeviceStream stream) {
  State& s = *s_;
  if (s.failed) throw core::Error(std::string(name()) + ": communicator unusable after an earlier failure: " + s.error);
  DeviceGuard guard(s.device);
  MDDP_CUDA_CHECK(cudaEventRecord(s.idle[1], static_cast<cudaStream_t>(stream.native())));
  std::string why;
  // No timeout: wait as long as it takes (-1), still watching the asynchronous error.
  if (poll_until_done(&s.idle[1], 1, s.timeout_s > 0.0 ? s.timeout_s : -1.0, why)) return;
  if (why.empty()) {
    std::ostringstream os;
    os << "the compute stream, which waits for collectives up to " << collective_name(s.slot_kind[s.launched % kSlots])
       << " #" << s.launched << " (eager, or replayed in a CUDA graph), did not finish within " << s.timeout_s
       << " s (--comm-timeout / MICRODDP_NCCL_TIMEOUT_S): a rank died, hangs, or issued different collectives";
    why = os.str();
  }
  mark_failed(why);
  throw core::Error(s.error);
}

void NcclBackend::set_teardown_grace(double seconds) { s_->teardown_grace_s = seconds > 0.0 ? seconds : 0.0; }

int NcclBackend::device() const { return s_->device; }
void NcclBackend::set_compute_stream(core::DeviceStream stream) { s_->compute = static_cast<cudaStream_t>(stream.native()); }
ncclComm_t NcclBackend::nccl_comm() const { return s_->comm; }
cudaStream_t NcclBackend::comm_stream_handle() const { return s_->stream; }
void* NcclBackend::device_scratch(std::int64_t bytes) { return s_->scratch.ensure(bytes, s_->stream, s_->capturing); }

std::string NcclBackend::capture_obstacle() const { return nccl_capture_obstacle(nccl_version()); }

int NcclBackend::nccl_version() {
  int v = 0;
  MDDP_NCCL_CHECK(ncclGetVersion(&v));
  return v;
}

std::string NcclBackend::description() const {
  const int v = nccl_version();
  // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
  return std::string(name()) + " (NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100) + ") on GPU " + std::to_string(s_->device) + ": " +
         kernels::cuda_device_description(s_->device);
}

void NcclBackend::set_timeout(double seconds) {
  s_->timeout_s = seconds > 0.0 ? seconds : 0.0;  // 0: wait forever, as for the other backends
}

void NcclBackend::mark_failed(const std::string& what) {
  State& s = *s_;
  if (s.failed) return;
  s.failed = true;
  s.failed_seq = s.completed + 1;
  s.error = what + "; NCCL communicator aborted (ncclCommAbort)";
  if (s.comm != nullptr) {
    (void)ncclCommAbort(s.comm);  // unblocks kernels stuck waiting for peers
    s.comm = nullptr;
  }
}

void NcclBackend::poll_async_error(std::uint64_t seq) {
  State& s = *s_;
  if (s.comm == nullptr) return;
  ncclResult_t async = ncclSuccess;
  const ncclResult_t rc = ncclCommGetAsyncError(s.comm, &async);
  const std::string where = std::string(collective_name(s.slot_kind[seq % kSlots])) + " #" + std::to_string(seq);
  if (rc != ncclSuccess) {
    mark_failed(where + ": ncclCommGetAsyncError failed: " + ncclGetErrorString(rc));
  } else if (async != ncclSuccess && async != ncclInProgress) {
    const char* last = ncclGetLastError(s.comm);
    mark_failed(where + ": NCCL asynchronous error: " + ncclGetErrorString(async) +
                (last != nullptr && *last != '\0' ? std::string(" (") + last + ")" : std::string()));
  }
}

bool NcclBackend::is_complete(std::uint64_t seq) {
  State& s = *s_;
  if (seq <= s.completed || s.failed) return true;
  const std::size_t slot = seq % kSlots;
  // A slot is reused only after its collective completed; a seq never launched (its launch threw)
  // has nothing to wait for.
  if (s.slot_seq[slot] != seq || s.slot_captured[slot]) return true;
  const cudaError_t q = cudaEventQuery(s.done[slot]);
  if (q == cudaSuccess) {
    s.completed = std::max(s.completed, seq);
    return true;
  }
  // cudaErrorNotReady is a status, but the runtime keeps it as the thread's last error: cleared here,
  // or the next kernel launch check (cudaGetLastError) would report "device not ready" for an
  // innocent kernel (found by the emulated device, which records it the same way).
  if (q == cudaErrorNotReady) (void)cudaGetLastError();
  if (q != cudaErrorNotReady) {
    mark_failed(std::string(collective_name(s.slot_kind[slot])) + " #" + std::to_string(seq) + ": CUDA error " +
                cudaGetErrorName(q) + ": " + cudaGetErrorString(q));
    return true;
  }
  poll_async_error(seq);
  return s.failed;
}

void NcclBackend::order_compute_after(const Work& work) {
  State& s = *s_;
  if (s.failed) throw core::Error(std::string(name()) + ": communicator unusable after an earlier failure: " + s.error);
  const std::size_t slot = work.seq() % kSlots;
  if (work.seq() == 0 || s.slot_seq[slot] != work.seq()) return;  // synchronous / long complete
  DeviceGuard guard(s.device);
  MDDP_CUDA_CHECK(cudaStreamWaitEvent(s.compute, s.done[slot], 0));
}

void NcclBackend::wait_for(std::uint64_t seq) {
  State& s = *s_;
  const std::int64_t start = core::now_ns();
  for (int polls = 0; !is_complete(seq); ++polls) {
    if (s.timeout_s > 0 && static_cast<double>(core::now_ns() - start) * 1e-9 > s.timeout_s) {
      mark_failed(std::string(collective_name(s.slot_kind[seq % kSlots])) + " #" + std::to_string(seq) +
                  ": not complete after " + std::to_string(s.timeout_s) +
                  " s (--comm-timeout / MICRODDP_NCCL_TIMEOUT_S): a rank died, hangs, or issued different collectives");
      break;
    }
    if (polls < kYieldPolls) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollSleep);
    }
  }
  if (s.failed && seq >= s.failed_seq) throw core::Error(s.error);
  // Everything launched is done: the stream is idle, a fresh anchor for the clock (a record, no wait).
  if (seq == s.launched && !s.failed) {
    DeviceGuard guard(s.device);
    s.clock->anchor(s.stream);
  }
}

std::int64_t NcclBackend::completion_ns(std::uint64_t seq) {
  State& s = *s_;
  const std::size_t slot = seq % kSlots;
  if (s.slot_seq[slot] != seq || s.slot_captured[slot] || !is_complete(seq) || (s.failed && seq >= s.failed_seq))
    return 0;  // untimed: unknown, captured, not complete or failed
  DeviceGuard guard(s.device);
  return s.clock->host_ns(s.done[slot]);
}

std::int64_t NcclBackend::start_ns(std::uint64_t seq) {
  State& s = *s_;
  const std::size_t slot = seq % kSlots;
  // Known once the collective completed (its start event then has completed too: same stream, earlier).
  if (s.slot_seq[slot] != seq || s.slot_captured[slot] || !is_complete(seq) || (s.failed && seq >= s.failed_seq))
    return 0;
  DeviceGuard guard(s.device);
  return s.clock->host_ns(s.started[slot]);
}

void NcclBackend::wait_launched() {
  if (s_->launched > 0) wait_for(s_->launched);
  if (s_->failed) throw core::Error(s_->error);
}

void NcclBackend::check_device_pointers(const CollectiveCall& call) const {
  auto check = [&](const TensorView& v, const char* what) {
    if (v.count == 0) return;
    cudaPointerAttributes a{};
    MDDP_CUDA_CHECK(cudaPointerGetAttributes(&a, v.data));
    MDDP_CHECK((a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) && a.device == s_->device,
               name() << ": " << collective_name(call.kind) << " " << what
                      << " buffer is marked Device::Cuda but is not device memory of this rank's GPU " << s_->device
                      << " (memory type " << static_cast<int>(a.type) << ", device " << a.device << ")");
  };
  if (collective_uses_send(call, rank())) check(call.send, "send");
  if (collective_uses_recv(call, rank())) check(call.recv, "recv");
}

Work NcclBackend::launch(const CollectiveCall& call, Mode mode) {
  State& s = *s_;
  if (s.failed) throw core::Error(std::string(name()) + ": communicator unusable after an earlier failure: " + s.error);
  DeviceGuard guard(s.device);
  const std::size_t slot = call.seq % kSlots;
  if (s.slot_seq[slot] != 0) wait_for(s.slot_seq[slot]);  // free the slot (throws if that one failed)

  // Which memory the used buffers are in (the base checked that send and recv agree where both count).
  const bool uses_send = collective_uses_send(call, rank()) && call.send.count > 0;
  const bool uses_recv = collective_uses_recv(call, rank()) && call.recv.count > 0;
  const bool host =
      (uses_send && call.send.device == core::Device::Host) || (uses_recv && call.recv.device == core::Device::Host);
  if (!host) check_device_pointers(call);  // a usage error: thrown before anything is enqueued
  // Inside a capture of the compute stream (a CUDA graph of the training step, ddp/step_graph.hpp)
  // the collective becomes part of the graph: the waits through events below fork the communication
  // stream into the capture and order_compute_after joins it back. Only what a replay can redo
  // without the host may be captured.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (s.compute != nullptr) MDDP_CUDA_CHECK(cudaStreamIsCapturing(s.compute, &capture));
  const bool captured = capture != cudaStreamCaptureStatusNone;
  MDDP_CHECK(!captured || (!host && mode == Mode::Async),
             name() << ": " << collective_name(call.kind) << " while the compute stream is captured into a CUDA graph: "
                    << (host ? "host buffers are staged by the host" : "a synchronous call waits on the host")
                    << ", which a graph replay cannot do (only asynchronous collectives on device buffers)");

  const StagingPlan plan = host ? plan_staging(call, rank()) : StagingPlan{};
  char* host_base[2] = {nullptr, nullptr};
  s.capturing = captured;
  try {
    MDDP_CUDA_CHECK(cudaEventRecord(s.compute_ready, s.compute));
    MDDP_CUDA_CHECK(cudaStreamWaitEvent(s.stream, s.compute_ready, 0));
    MDDP_CUDA_CHECK(cudaEventRecord(s.started[slot], s.stream));  // start of execution (see the top)
    if (host) {
      char* dev_base[2] = {nullptr, nullptr};
      for (int i = 0; i < plan.region_count; ++i) {
        const StagingRegion& r = plan.regions[i];
        dev_base[i] = static_cast<char*>(s.dev_stage[i].ensure(r.bytes, s.stream, /*capturing=*/false));
        host_base[i] = s.host_stage[i].ensure(r.bytes);
        if (r.copy_in) {
          std::memcpy(host_base[i], r.base, to_size(r.bytes));
          MDDP_CUDA_CHECK(
              cudaMemcpyAsync(dev_base[i], host_base[i], to_size(r.bytes), cudaMemcpyHostToDevice, s.stream));
        }
      }
      enqueue_device(staged_call(call, plan, dev_base, core::Device::Cuda));
      if (plan.copy_out) {
        const std::int64_t off = plan.recv.offset_bytes;
        MDDP_CUDA_CHECK(cudaMemcpyAsync(host_base[plan.recv.region] + off, dev_base[plan.recv.region] + off,
                                        to_size(call.recv.bytes()), cudaMemcpyDeviceToHost, s.stream));
      }
    } else {
      enqueue_device(call);
    }
    MDDP_CUDA_CHECK(cudaEventRecord(s.done[slot], s.stream));
    s.capturing = false;
  } catch (const std::exception& e) {
    s.capturing = false;
    // Other ranks may already be inside this collective: the communicator cannot be trusted any more.
    mark_failed(std::string(collective_name(call.kind)) + " #" + std::to_string(call.seq) + ": " + e.what());
    throw core::Error(s.error);
  }
  s.slot_seq[slot] = call.seq;
  s.slot_kind[slot] = call.kind;
  s.slot_captured[slot] = captured ? 1 : 0;
  s.launched = call.seq;

  if (host) {
    wait_for(call.seq);
    if (plan.copy_out) {
      std::memcpy(call.recv.data, host_base[plan.recv.region] + plan.recv.offset_bytes, to_size(call.recv.bytes()));
    }
    return Work();
  }
  if (mode == Mode::Sync) {
    wait_for(call.seq);
    return Work();
  }
  return Work(this, call.seq);
}

void NcclBackend::enqueue_all_reduce(const TensorView& send, const TensorView& recv, ReduceOp op) {
  MDDP_NCCL_CHECK(ncclAllReduce(send.data, recv.data, to_size(recv.count), nccl_dtype(recv.dtype), nccl_op(op),
                                s_->comm, s_->stream));
}

void NcclBackend::enqueue_device(const CollectiveCall& call) {
  State& s = *s_;
  MDDP_CHECK(s.comm != nullptr, name() << ": NCCL communicator already aborted");
  const int n = size(), r = rank();
  const ReduceOp op = call.op == ReduceOp::Mean ? ReduceOp::Sum : call.op;
  const double mean_scale = 1.0 / static_cast<double>(n);  // fl(1/n), as the host backends' Mean
  switch (call.kind) {
    case CollectiveKind::Barrier:
      MDDP_NCCL_CHECK(ncclAllReduce(s.barrier_word, s.barrier_word, 1, ncclInt32, ncclMax, s.comm, s.stream));
      return;
    case CollectiveKind::AllReduce: {
      if (call.recv.count == 0) return;
      enqueue_all_reduce(call.send, call.recv, op);
      if (call.op == ReduceOp::Mean)
        gpu::device_scale(call.recv.data, call.recv.count, call.recv.dtype, mean_scale, s.stream);
      return;
    }
    case CollectiveKind::Broadcast:
      if (call.recv.count == 0) return;
      MDDP_NCCL_CHECK(ncclBroadcast(call.recv.data, call.recv.data, to_size(call.recv.count),
                                    nccl_dtype(call.recv.dtype), call.root, s.comm, s.stream));
      return;
    case CollectiveKind::Scatter: {
      const std::int64_t c = call.recv.count;
      if (c == 0) return;
      const ncclDataType_t t = nccl_dtype(call.recv.dtype);
      if (r != call.root) {
        MDDP_NCCL_CHECK(ncclRecv(call.recv.data, to_size(c), t, call.root, s.comm, s.stream));
        return;
      }
      NcclGroup group;
      for (int q = 0; q < n; ++q) {
        if (q != r) MDDP_NCCL_CHECK(ncclSend(call.send.address_of(q * c), to_size(c), t, q, s.comm, s.stream));
      }
      group.end();
      if (call.recv.data != call.send.address_of(r * c)) {
        MDDP_CUDA_CHECK(cudaMemcpyAsync(call.recv.data, call.send.address_of(r * c), to_size(call.recv.bytes()),
                                        cudaMemcpyDeviceToDevice, s.stream));
      }
      return;
    }
    case CollectiveKind::Gather: {
      const std::int64_t c = call.send.count;
      if (c == 0) return;
      const ncclDataType_t t = nccl_dtype(call.send.dtype);
      if (r != call.root) {
        MDDP_NCCL_CHECK(ncclSend(call.send.data, to_size(c), t, call.root, s.comm, s.stream));
        return;
      }
      NcclGroup group;
      for (int q = 0; q < n; ++q) {
        if (q != r) MDDP_NCCL_CHECK(ncclRecv(call.recv.address_of(q * c), to_size(c), t, q, s.comm, s.stream));
      }
      group.end();
      if (call.send.data != call.recv.address_of(r * c)) {
        MDDP_CUDA_CHECK(cudaMemcpyAsync(call.recv.address_of(r * c), call.send.data, to_size(call.send.bytes()),
                                        cudaMemcpyDeviceToDevice, s.stream));
      }
      return;
    }
    case CollectiveKind::AllGather: {
      // NCCL's in-place all-gather is ours: send.data == recv.data + rank * c.
      const std::int64_t c = call.send.count;
      if (c == 0) return;
      MDDP_NCCL_CHECK(
          ncclAllGather(call.send.data, call.recv.data, to_size(c), nccl_dtype(call.send.dtype), s.comm, s.stream));
      return;
    }
    case CollectiveKind::ReduceScatter: {
      const std::int64_t c = call.recv.count;
      if (c == 0) return;
      const ncclDataType_t t = nccl_dtype(call.recv.dtype);
      // Ours is in place when recv.data == send.data (result in block 0); NCCL's when recv is block
      // `rank`. For rank > 0 run NCCL's in-place form, then move block r to the front (disjoint ranges).
      if (call.send.data == call.recv.data && r != 0) {
        char* own = call.send.address_of(r * c);
        MDDP_NCCL_CHECK(ncclReduceScatter(call.send.data, own, to_size(c), t, nccl_op(op), s.comm, s.stream));
        MDDP_CUDA_CHECK(
            cudaMemcpyAsync(call.recv.data, own, to_size(call.recv.bytes()), cudaMemcpyDeviceToDevice, s.stream));
      } else {
        MDDP_NCCL_CHECK(
            ncclReduceScatter(call.send.data, call.recv.data, to_size(c), t, nccl_op(op), s.comm, s.stream));
      }
      if (call.op == ReduceOp::Mean) gpu::device_scale(call.recv.data, c, call.recv.dtype, mean_scale, s.stream);
      return;
    }
  }
  MDDP_CHECK(false, name() << ": unknown collective kind " << static_cast<int>(call.kind));
}

int nccl_rank_device(const MpiRuntime& runtime) {
  // Every rank reaches the identity exchange, also one that has no usable GPU, so a failure on some
  // ranks is reported everywhere instead of leaving the others waiting in the exchange.
  std::string error;
  GpuIdentity mine;
  mine.host = runtime.hostname();
  int device = -1;
  try {
    device = nccl_device_for_rank(runtime.local_rank(), runtime.local_size(), kernels::cuda_device_count());
    mine.uuid = kernels::cuda_device_uuid(device);
    mine.uses_gpu = true;
  } catch (const std::exception& e) {
    error = e.what();
  }
  const GpuSharing s = exchange_gpu_identities(runtime, mine, kernels::format_device_uuid);
  MDDP_USAGE_CHECK(error.empty(), error);
  MDDP_USAGE_CHECK(s.ranks_without_gpu == 0, "nccl: " << s.ranks_without_gpu << " other rank(s) have no usable GPU");
  MDDP_AGREED_USAGE_CHECK(!s.shared(), "nccl: " << s.example
                                                << "; NCCL needs one GPU per rank: give each rank its own "
                                                   "GPU (e.g. srun --gpus-per-task=1, or fewer ranks per node) or use "
                                                   "--comm mpi, which can share a GPU");
  return device;
}

std::unique_ptr<StreamBackend> make_nccl_backend(const MpiRuntime& runtime, const CommConfig& config) {
  return std::make_unique<NcclBackend>(runtime.world(), nccl_rank_device(runtime), config.nccl_timeout_s);
}

}  // namespace microddp::comm
