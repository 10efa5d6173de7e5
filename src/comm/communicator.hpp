// communicator.hpp — the one interface every communication backend implements.
//
// Contract:
//   * Every collective returns a Work (see work.hpp). Mode::Sync returns a completed Work after the
//     collective finished; Mode::Async returns at once and the collective progresses on the
//     communicator's communication thread (progress_engine.hpp) while the caller computes.
//   * All ranks must issue the same collectives in the same order (DESIGN.md invariant); every
//     collective gets a sequence number, identical on all ranks.
//   * Buffer conventions (counts, roots, in-place) are documented on CollectiveCall (types.hpp).
//     Arguments are validated here, once, before any backend sees them; a bad call throws.
//   * Buffers passed to an async collective must stay alive and untouched until its Work completes.
//   * Counts are 64-bit; backends handle counts beyond MPI's int (chunking, never truncation).
//
// Backends derive from this class and implement execute(), a blocking run of one collective.
// A backend's destructor must call shutdown() first, so the communication thread stops before
// the backend's own members are destroyed.
//
// Direct dispatch (for NCCL): a backend whose collectives are asynchronous by nature (NCCL enqueues
// a kernel on a CUDA stream and returns; the GPU makes the progress) gains nothing from a
// communication thread: a hand-off would only add latency, and a thread calling blocking execute()
// would serialise launches. Such a backend constructs the base with Dispatch::Direct and overrides
// launch() (enqueue, return a Work from its own WorkSource) and wait_launched(). Validation and
// sequence numbers stay here, identical for both kinds; execute() is then never called.
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

#include "comm/progress_engine.hpp"
#include "comm/sync_check.hpp"
#include "comm/types.hpp"
#include "comm/work.hpp"

namespace microddp::comm {

class Communicator {
 public:
  Communicator(int rank, int size);
  virtual ~Communicator();
  // How collectives reach the backend: the progress engine's thread calling execute() (default), or
  // launch() on the caller's thread (see the file comment).
  enum class Dispatch : std::uint8_t { ProgressEngine, Direct };
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual std::string_view name() const = 0;

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
  // outstanding work first; call it at the same point on every rank. Backends with Direct dispatch
  // (NCCL) override it: they enforce the timeout themselves while waiting on their stream.
  virtual void set_comm_timeout(double seconds);

  // Orders later collectives after the work queued so far on `stream` (a cudaStream_t of this rank's
  // GPU, e.g. kernels::Ops::native_stream()) without blocking the host: backends that run on CUDA
  // streams (NCCL) must know the compute stream or they could read gradients not yet written. Host
  // backends ignore it: they wait for the whole device before touching device buffers
  // (device_staging.hpp).
  virtual void set_compute_stream(void* /*stream*/) {}

  // Stream-ordered completion (NCCL on device buffers): instead of the host waiting for a
  // collective, the compute stream can be made to wait for it on the device, so a GPU training step
  // queues everything and synchronises once (docs/gpu.md). Host backends return false.
  virtual bool completes_in_stream_order() const { return false; }
  // Only when completes_in_stream_order(): the compute stream waits, on the device, for collective
  // `work` and every collective launched before it; the host does not wait, and work.test() turns
  // true once the device got there (after a later synchronisation of the compute stream, at once).
  virtual void order_compute_after(const Work& work);

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
  // Running hash over the fingerprints of every collective executed so far (after synchronize()).
  std::uint64_t sync_history() const;
  // Cost report: check_sync() calls so far, and the wall time of those with step >= 0 (the
  // periodic ones; the start-up check also absorbs the ranks' different set-up times).
  struct SyncCheckStats {
    std::int64_t checks = 0;           // all check_sync() calls that passed
    std::int64_t timed = 0;            // those with step >= 0
    double min_ms = 0.0, mean_ms = 0.0;  // of the timed ones; the mean includes waiting for the slowest rank
  };
  SyncCheckStats sync_check_stats() const;

 protected:
  // Runs one collective to completion. Called on the communication thread or, for synchronous
  // calls with nothing queued, on the caller's thread; never concurrently with itself.
  // For host buffers, ReduceOp::Mean never reaches execute() (it arrives as Sum and the base
  // divides afterwards); device backends receive Mean as is.
  virtual void execute(const CollectiveCall& call) = 0;

  // Stops the communication thread after draining queued work (Direct: waits for launched work,
  // errors ignored). Idempotent; afterwards every call throws.
  void shutdown();

  Communicator(int rank, int size, Dispatch dispatch);
  // Direct dispatch only. Called on the caller's thread, in issue order, with call.seq assigned and
  // the arguments validated. Mode::Sync returns a completed Work after the collective finished;
  // Mode::Async returns at once. Every ReduceOp, Mean included, arrives as issued (any device).
  virtual Work launch(const CollectiveCall& call, Mode mode);
  // Direct dispatch only: waits for every collective launched so far; throws on failure.
  virtual void wait_launched();

 private:
  Work submit(CollectiveCall call, Mode mode);
  void execute_with_mean(const CollectiveCall& call);
  void before_collective(const CollectiveCall& call);  // desync fingerprint (and debug exchange)

  int rank_;
  int size_;
  Dispatch dispatch_ = Dispatch::ProgressEngine;
  bool shut_down_ = false;
  std::uint64_t launched_ = 0;  // Direct dispatch: last sequence number handed to launch()
  // Declared before engine_ so it outlives the engine thread that reports to it.
  std::unique_ptr<CollectiveWatchdog> watchdog_;
  std::unique_ptr<SyncChecker> sync_;  // null until attach_sync_comm()
  // Fault injection for the reliability tests (docs/reliability.md), read from the environment:
  //   MICRODDP_FAULT_EXIT="rank:seq[:code]": that rank _Exit(code)s (default 3) just before
  //     executing collective `seq` (no destructors, no MPI_Finalize: like a crash);
  //   MICRODDP_FAULT_EXTRA_COLLECTIVE="rank:seq": that rank issues one extra empty all_reduce (it
  //     moves no data on any backend, so nothing hangs) as its collective `seq`: a silent desync.
  std::uint64_t fault_exit_seq_ = 0;   // 0: off
  int fault_exit_code_ = 3;
  std::uint64_t fault_extra_seq_ = 0;  // 0: off
  std::atomic<bool> debug_sync_{false};
  std::int64_t sync_checks_ = 0, sync_timed_ = 0, sync_ns_total_ = 0, sync_ns_min_ = 0;
  std::unique_ptr<ProgressEngine> engine_;
};

}  // namespace microddp::comm
