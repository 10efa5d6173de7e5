// backend.hpp — the two kinds of communication backend a Communicator (communicator.hpp) can own.
//
// A backend only moves data. Everything every backend shares — argument validation, sequence
// numbers, desync fingerprints, fault hooks, the timeout policy, how a collective reaches the
// backend — is the Communicator's and its dispatcher's (dispatcher.hpp), written once.
//
// The two kinds differ in who makes the progress and how completion is observed:
//   * HostBackend (mpi, naive, ring, rd, auto): execute() runs one collective to completion and
//     blocks. Progress happens only while a thread is inside it, so the communicator gives it a
//     communication thread (the progress engine) for async collectives, and a collective timeout is
//     a watchdog thread watching that thread. For host buffers ReduceOp::Mean never reaches
//     execute(): run() lowers it to Sum and scales afterwards, once for every host backend.
//   * StreamBackend (nccl, nccl-ring): launch() enqueues the collective on a CUDA stream and returns;
//     the device makes the progress, completion is a device event the backend tracks (it is the
//     Work's source), and the backend enforces a timeout itself while waiting. A thread would only
//     add a hand-off, so the communicator calls launch() directly on the caller's thread. It can
//     also order a compute stream after a collective on the device (completes_in_stream_order).
//     Every ReduceOp, Mean included, arrives as issued.
//
// Contract (both kinds): the communicator calls a backend from one thread at a time, in issue order,
// with call.seq assigned and the arguments validated (types.hpp conventions); a backend never needs
// to stop a thread or drain work in its destructor, because the communicator's dispatcher has
// stopped calling it — and waited for everything it launched (a StreamBackend: through
// finish_for_teardown, which may give up and abort) — before the backend is destroyed.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include "comm/types.hpp"
#include "comm/work.hpp"
#include "core/device_stream.hpp"

namespace microddp::comm {

class Backend {
 public:
  Backend(int rank, int size);  // throws core::Error unless 0 <= rank < size
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual std::string_view name() const = 0;  // as --comm spells it

 private:
  int rank_;
  int size_;
};

class HostBackend : public Backend {
 public:
  using Backend::Backend;
  // Runs `call` to completion (throws core::Error on failure). Host buffers with ReduceOp::Mean run
  // as Sum, then this rank's result is multiplied by fl(1/n) (kernels::host_scale); device buffers
  // (and calls that move nothing) reach execute() with the op as issued.
  void run(const CollectiveCall& call);

 protected:
  virtual void execute(const CollectiveCall& call) = 0;
};

class StreamBackend : public Backend {
 public:
  using Backend::Backend;
  // Enqueues `call`. Mode::Sync returns a completed Work after the collective finished; Mode::Async
  // returns at once with a Work whose source is this backend.
  virtual Work launch(const CollectiveCall& call, Mode mode) = 0;
  // Waits for every collective launched so far; throws core::Error on failure.
  virtual void wait_launched() = 0;
  // The communicator is going away: waits for the launched collectives like wait_launched(), but a
  // backend whose waits can last forever bounds this one (a collective some rank never joins must not
  // hang the teardown); never throws (failures were reported to whoever waited on the Work).
  virtual void finish_for_teardown() noexcept {
    try {
      wait_launched();
    } catch (const std::exception&) {  // nowhere to report it: the communicator is being destroyed
    }
  }
  // How long a wait lets one collective run before the backend gives up on it (<= 0: forever).
  virtual void set_timeout(double seconds) = 0;
  // Later collectives are ordered after the work queued so far on `stream` (a CUDA stream).
  virtual void set_compute_stream(core::DeviceStream stream) = 0;
  // The compute stream waits, on the device, for `work` and every collective before it.
  virtual void order_compute_after(const Work& work) = 0;
  // The host waits until `stream` (a CUDA stream of this rank's GPU) has run everything queued on it
  // so far, watching this backend's collectives meanwhile: the stream may wait for them (after
  // order_compute_after, or in a CUDA graph that replays captured ones), and a collective whose peer
  // died or hangs never completes on a GPU, so the host must not block in cudaStreamSynchronize.
  // Polls with the asynchronous error and the timeout; a failure aborts the communicator (which
  // releases the kernels waiting for peers) and throws core::Error.
  virtual void wait_for_stream(core::DeviceStream stream) = 0;
  // Why this backend's collectives cannot be captured into a CUDA graph ("" when they can).
  virtual std::string capture_obstacle() const { return {}; }
};

}  // namespace microddp::comm
