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
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "comm/progress_engine.hpp"
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

  int rank_;
  int size_;
  Dispatch dispatch_ = Dispatch::ProgressEngine;
  bool shut_down_ = false;
  std::uint64_t launched_ = 0;  // Direct dispatch: last sequence number handed to launch()
  // Declared before engine_ so it outlives the engine thread that reports to it.
  std::unique_ptr<CollectiveWatchdog> watchdog_;
  std::unique_ptr<ProgressEngine> engine_;
};

}  // namespace microddp::comm
