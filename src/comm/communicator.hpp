// communicator.hpp — the one communicator type every caller uses, for every backend.
//
// Contract:
//   * Every collective returns a Work (see work.hpp). Mode::Sync returns a completed Work after the
//     collective finished; Mode::Async returns at once and the collective progresses (on the
//     communication thread for host backends, on the device for stream backends) while the caller
//     computes.
//   * All ranks must issue the same collectives in the same order (docs/design.md, invariants); every
//     collective gets a sequence number, identical on all ranks.
//   * Buffer conventions (counts, roots, in-place) are documented on CollectiveCall (types.hpp).
//     Arguments are validated here, once, before any backend sees them; a bad call throws.
//   * Buffers passed to an async collective must stay alive and untouched until its Work completes.
//   * Counts are 64-bit; backends handle counts beyond MPI's int (chunking, never truncation).
//
// Composition: a Communicator is final and owns
//   * a backend (backend.hpp): a HostBackend (mpi, naive, ring, rd, auto: blocking execute) or a
//     StreamBackend (nccl, nccl-ring: enqueue on a CUDA stream), which only moves data;
//   * a dispatcher (dispatcher.hpp), chosen by the backend's kind at construction: the progress
//     engine for host backends, direct launch for stream backends. Every behaviour that differs
//     between the kinds (threads, timeouts, stream order) is the dispatcher's, so nothing here
//     branches on the kind;
//   * what is the same for every backend: validation, the fault points (comm_fault_point below),
//     desync detection (sync_check.hpp) and its statistics.
// Teardown needs no cooperation from any backend: members are destroyed in reverse declaration
// order and the dispatcher is declared last, so it waits for outstanding work and stops its thread
// while the desync checker and the backend it calls are still alive.
//
// Desync detection (sync_check.hpp): every collective's fingerprint enters a running hash in issue
// order. check_sync() compares it across ranks; set_debug_sync(true) compares every collective's
// fingerprint before it runs. Both need attach_sync_comm() (make_communicator calls it).
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "comm/backend.hpp"
#include "comm/runtime/dispatcher.hpp"
#include "comm/runtime/sync_check.hpp"
#include "comm/types.hpp"
#include "comm/work.hpp"
#include "core/fault_plan.hpp"

namespace microddp::comm {

// The communicator's fault points (core/fault_plan.hpp), for the reliability tests; occurrence = the
// collective's sequence number on the armed rank. `microddp` arms them from MICRODDP_FAULT_EXIT and
// MICRODDP_FAULT_EXTRA_COLLECTIVE (app/fault_env.hpp).
namespace comm_fault_point {
// Just before the collective runs, the rank _Exit()s with the code in the argument (decimal, default
// 3): like a crash, no destructors, no MPI_Finalize.
inline constexpr std::string_view kExit = "comm_exit";
// The rank issues one extra empty all_reduce as that collective: a silent desync.
inline constexpr std::string_view kExtraCollective = "comm_extra_collective";
inline constexpr int kDefaultExitCode = 3;
}  // namespace comm_fault_point

class Communicator final {
 public:
  // `faults`: the reliability tests' fault points (comm_fault_point), acting only on their rank.
  explicit Communicator(std::unique_ptr<HostBackend> backend, const core::FaultPlan& faults = {});
  explicit Communicator(std::unique_ptr<StreamBackend> backend, const core::FaultPlan& faults = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return backend_->rank(); }
  int size() const { return backend_->size(); }
  std::string_view name() const { return backend_->name(); }

  Work all_reduce(core::TensorView send, core::TensorView recv, ReduceOp op, Mode mode = Mode::Sync);
  Work all_reduce(core::TensorView buf, ReduceOp op, Mode mode = Mode::Sync) { return all_reduce(buf, buf, op, mode); }
  Work barrier(Mode mode = Mode::Sync);
  Work broadcast(core::TensorView buf, int root, Mode mode = Mode::Sync);
  Work scatter(core::TensorView send, core::TensorView recv, int root, Mode mode = Mode::Sync);
  Work gather(core::TensorView send, core::TensorView recv, int root, Mode mode = Mode::Sync);
  Work all_gather(core::TensorView send, core::TensorView recv, Mode mode = Mode::Sync);
  Work reduce_scatter(core::TensorView send, core::TensorView recv, ReduceOp op, Mode mode = Mode::Sync);

  // Waits for every collective issued so far.
  void synchronize();
  // Number of collectives issued so far (the last sequence number).
  std::uint64_t collectives_issued() const;

  // Abort the whole job with a message naming the collective (kind, sequence number, count, dtype,
  // backend) when one collective has not completed after `seconds` (<= 0: no watchdog). Waits for
  // outstanding work first; call it at the same point on every rank. On stream backends (NCCL) the
  // backend enforces it while waiting on its stream and fails the collective instead.
  void set_comm_timeout(double seconds);

  // Orders later collectives after the work queued so far on `stream` (a CUDA stream of this rank's
  // GPU, e.g. kernels::Ops::stream()) without blocking the host: backends that run on CUDA
  // streams (NCCL) must know the compute stream or they could read gradients not yet written. Host
  // backends ignore it: they wait for the whole device before touching device buffers
  // (device_staging.hpp).
  void set_compute_stream(core::DeviceStream stream);

  // Stream-ordered completion (NCCL on device buffers): instead of the host waiting for a
  // collective, the compute stream can be made to wait for it on the device, so a GPU training step
  // queues everything and synchronises once (docs/gpu.md). Host backends return false.
  bool completes_in_stream_order() const;
  // Only when completes_in_stream_order(): the compute stream waits, on the device, for collective
  // `work` and every collective launched before it; the host does not wait, and work.test() turns
  // true once the device got there (after a later synchronisation of the compute stream, at once).
  void order_compute_after(const Work& work);
  // Waits on the host until everything queued so far on `stream` (the compute stream) has run.
  // Stream-ordered backends: that stream may wait for collectives (order_compute_after, or a CUDA
  // graph replaying captured ones), and a collective whose peer died or hangs never completes on a
  // GPU, so this polls with the backend's asynchronous error and the collective timeout, and a
  // failure aborts the communicator (which releases the stream) and throws core::Error; call it
  // before any host synchronisation of such a stream. Host backends: returns at once (their
  // collectives complete on the host; the caller's own synchronisation waits for the stream).
  void wait_for_stream(core::DeviceStream stream);
  // Why this backend's collectives cannot be captured into a CUDA graph, beyond completing on the
  // host (e.g. an NCCL too old to be captured); "" when nothing stands in the way.
  std::string capture_obstacle() const;

  // The backend as its concrete type, or nullptr when it is another one: for backend-specific
  // queries (tests, run headers), never needed to communicate.
  template <typename B>
  B* backend_as() const {
    return dynamic_cast<B*>(backend_.get());
  }

  // ---- desync detection (sync_check.hpp) ----
  // Gives this communicator a private duplicate of `parent` for fingerprint exchanges. Collective
  // over parent; once, before the first collective. make_communicator() does it for every backend.
  void attach_sync_comm(MPI_Comm parent);
  // Compares (collectives issued, running hash of their fingerprints) across ranks; on a mismatch
  // every rank logs a report naming the ranks, their sequence numbers and last collectives, and
  // this throws core::Error. Waits for outstanding work first; call it at the same point on every
  // rank. `where` names the point in the report (e.g. "sync check at start-up"), `step` >= 0 is
  // appended as " step N". Allocates nothing when the ranks agree. Covered by the watchdog.
  void check_sync(std::string_view where, std::int64_t step = -1);
  // Debug mode: before every collective, ranks all-gather its fingerprint (on the thread that runs
  // it, so the order is the collectives' order) and a mismatch throws naming each rank's
  // collective before any of its data moves. Waits for outstanding work first. Collective: every
  // rank calls it at the same point; ranks passing different values get an agreed core::UsageError.
  // Cost: one small all-gather per collective.
  void set_debug_sync(bool on);
  bool debug_sync() const { return debug_sync_.load(std::memory_order_relaxed); }
  // Whether a fault point (comm_fault_point) is armed on this rank: they count host calls.
  bool has_fault_points() const { return fault_exit_seq_ != 0 || fault_extra_seq_ != 0; }
  // Running hash over the fingerprints of every collective executed so far (after synchronize()).
  std::uint64_t sync_history() const;
  // Cost report: check_sync() calls so far, and the wall time of those with step >= 0 (the
  // periodic ones; the start-up check also absorbs the ranks' different set-up times).
  struct SyncCheckStats {
    std::int64_t checks = 0;             // all check_sync() calls that passed
    std::int64_t timed = 0;              // those with step >= 0
    double min_ms = 0.0, mean_ms = 0.0;  // of the timed ones; the mean includes waiting for the slowest rank
  };
  SyncCheckStats sync_check_stats() const;

 private:
  struct Common {};  // selects the constructor both public ones delegate to
  Communicator(Common, std::unique_ptr<Backend> backend, const core::FaultPlan& faults);
  Work submit(CollectiveCall call, Mode mode);
  // Runs right before each collective, on the thread that executes it: the exit fault, then the
  // desync fingerprint (and the debug exchange).
  void before_collective(const CollectiveCall& call);
  Dispatcher::BeforeCollective before_hook() {
    return [this](const CollectiveCall& call) { before_collective(call); };
  }

  // Declaration order is the teardown order reversed; see the file comment.
  std::unique_ptr<Backend> backend_;
  // This rank's comm_fault_point sequence numbers (0: off), read once from the plan.
  std::uint64_t fault_exit_seq_ = 0;
  int fault_exit_code_ = comm_fault_point::kDefaultExitCode;
  std::uint64_t fault_extra_seq_ = 0;
  std::unique_ptr<SyncChecker> sync_;  // null until attach_sync_comm()
  std::atomic<bool> debug_sync_{false};
  std::int64_t sync_checks_ = 0, sync_timed_ = 0, sync_ns_total_ = 0, sync_ns_min_ = 0;
  std::unique_ptr<Dispatcher> dispatcher_;  // last: stops before everything it calls
};

}  // namespace microddp::comm
