// dispatcher.hpp — how a Communicator's collectives reach its backend and how their completion is
// observed: the one place that differs between host and stream backends (backend.hpp), so the
// Communicator itself never asks which kind it owns.
//
//   engine (HostBackend):   a progress engine (progress_engine.hpp) runs the backend's blocking
//                           run() on a communication thread in FIFO order (a synchronous call with
//                           nothing queued runs inline); a --comm-timeout is a CollectiveWatchdog
//                           watching that thread, reporting the collective and aborting the job.
//   direct (StreamBackend): launch() on the caller's thread, in issue order; completion, timeouts
//                           and stream ordering are the backend's.
//
// Contract:
//   * submit() assigns call.seq = submitted() + 1 and calls `before` with it right before the
//     collective executes, on the thread that executes it and in issue order (engine: inside the
//     watchdog's window), then the backend. Errors are those of progress_engine.hpp / the backend.
//   * The destructor waits for everything submitted (errors are dropped: whoever waited on the Work
//     saw them) and stops the dispatcher's threads, so a backend outliving its dispatcher is never
//     called again. The Communicator declares its dispatcher after its backend for exactly this.
//   * The dispatcher refers to the backend and `before`'s targets; both must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "comm/backend.hpp"
#include "comm/types.hpp"
#include "comm/work.hpp"

namespace microddp::comm {

class Dispatcher {
 public:
  using BeforeCollective = std::function<void(const CollectiveCall&)>;

  virtual ~Dispatcher() = default;

  virtual Work submit(CollectiveCall call, Mode mode) = 0;
  virtual void synchronize() = 0;  // waits for everything submitted; throws the first failure
  virtual std::uint64_t submitted() const = 0;

  // Waits for outstanding work, then limits every later collective to `seconds` (<= 0: no limit).
  virtual void set_comm_timeout(double seconds) = 0;
  // Brackets a blocking exchange of the communicator's own (the desync check), made while nothing
  // is in flight, so the collective timeout covers it too; `label` names it in the report.
  virtual void begin_exchange(std::uint64_t after_seq, const char* label) = 0;
  virtual void end_exchange() = 0;

  // Stream ordering (communicator.hpp documents them); the engine's backends see no streams.
  virtual void set_compute_stream(core::DeviceStream stream) = 0;
  virtual bool completes_in_stream_order() const = 0;
  virtual void order_compute_after(const Work& work) = 0;
  virtual void wait_for_stream(core::DeviceStream stream) = 0;
  virtual std::string capture_obstacle() const = 0;
};

std::unique_ptr<Dispatcher> make_engine_dispatcher(HostBackend& backend, Dispatcher::BeforeCollective before);
std::unique_ptr<Dispatcher> make_direct_dispatcher(StreamBackend& backend, Dispatcher::BeforeCollective before);

}  // namespace microddp::comm
