// dispatcher.cpp — the engine dispatcher (host backends) and the direct dispatcher (stream
// backends); see dispatcher.hpp.
#include "comm/runtime/dispatcher.hpp"

#include <algorithm>
#include <sstream>

#include "comm/runtime/collective_watchdog.hpp"
#include "comm/runtime/mpi_runtime.hpp"
#include "comm/runtime/progress_engine.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace microddp::comm {

namespace {

class EngineDispatcher final : public Dispatcher {
 public:
  EngineDispatcher(HostBackend& backend, BeforeCollective before)
      : backend_(backend), engine_([this, before = std::move(before)](const CollectiveCall& call) {
          before(call);  // on the executing thread, in issue order, inside the watchdog's window
          backend_.run(call);
        }) {}
  // Members go in reverse order: engine_ drains its queue and joins its thread, then the watchdog
  // it reported to stops.

  Work submit(CollectiveCall call, Mode mode) override { return engine_.submit(call, mode); }
  void synchronize() override { engine_.wait_all(); }
  std::uint64_t submitted() const override { return engine_.submitted(); }

  void set_comm_timeout(double seconds) override {
    engine_.wait_all();
    engine_.set_watchdog(nullptr);
    watchdog_.reset();
    if (seconds <= 0.0) return;
    watchdog_ = std::make_unique<CollectiveWatchdog>(
        seconds, [this, seconds](const CollectiveCall& c, const char* label, double waited) {
          std::ostringstream os;
          os << "collective timeout on rank " << backend_.rank() << ": ";
          if (label != nullptr) {
            os << label << " after seq=" << c.seq;
          } else {
            os << collective_name(c.kind) << " seq=" << c.seq << " count=" << std::max(c.send.count, c.recv.count)
               << " dtype=" << core::dtype_name(c.recv.dtype);
          }
          os << " backend=" << backend_.name() << " has not completed after " << waited << " s (--comm-timeout "
             << seconds << " s): another rank did not reach this collective, issued a different one, or is stopped. "
             << "Aborting the job.";
          core::log_line(core::LogLevel::Error, os.str());
          // MPI_Abort from this thread while the communication thread is blocked inside MPI: the one
          // MPI call that is allowed to cut across MPI_THREAD_SERIALIZED in practice, and the way the
          // launcher learns to kill every rank. (Open MPI 4.1's mpiexec itself occasionally deadlocks
          // after the ranks are gone; see docs/reliability.md.)
          MpiRuntime::abort_all(1);
        });
    engine_.set_watchdog(watchdog_.get());
  }

  void begin_exchange(std::uint64_t after_seq, const char* label) override {
    if (!watchdog_) return;
    CollectiveCall last;
    last.seq = after_seq;
    watchdog_->begin(last, label);
  }
  void end_exchange() override {
    if (watchdog_) watchdog_->end();
  }

  // Host backends wait for the whole device before touching device buffers (device_staging.hpp).
  void set_compute_stream(core::DeviceStream /*stream*/) override {}
  bool completes_in_stream_order() const override { return false; }
  // Nothing of a host backend's runs on a stream: the caller's own synchronisation waits for it.
  void wait_for_stream(core::DeviceStream /*stream*/) override {}
  std::string capture_obstacle() const override { return {}; }
  void order_compute_after(const Work& /*work*/) override {
    MDDP_CHECK(false, backend_.name() << ": order_compute_after() on a backend whose collectives do not complete in "
                                         "stream order (check completes_in_stream_order() first)");
  }

 private:
  HostBackend& backend_;
  std::unique_ptr<CollectiveWatchdog> watchdog_;  // before engine_: outlives the thread that reports to it
  ProgressEngine engine_;
};

class DirectDispatcher final : public Dispatcher {
 public:
  DirectDispatcher(StreamBackend& backend, BeforeCollective before) : backend_(backend), before_(std::move(before)) {}
  ~DirectDispatcher() override { backend_.finish_for_teardown(); }

  Work submit(CollectiveCall call, Mode mode) override {
    call.seq = ++launched_;
    before_(call);  // launches happen here, in issue order, on the caller's thread
    return backend_.launch(call, mode);
  }
  void synchronize() override { backend_.wait_launched(); }
  std::uint64_t submitted() const override { return launched_; }

  void set_comm_timeout(double seconds) override {
    backend_.wait_launched();
    backend_.set_timeout(seconds);
  }
  // Nothing of ours runs on another thread to watch the exchange; the backend's timeout bounds its
  // own waits on the device.
  void begin_exchange(std::uint64_t /*after_seq*/, const char* /*label*/) override {}
  void end_exchange() override {}

  void set_compute_stream(core::DeviceStream stream) override { backend_.set_compute_stream(stream); }
  bool completes_in_stream_order() const override { return true; }
  void order_compute_after(const Work& work) override { backend_.order_compute_after(work); }
  void wait_for_stream(core::DeviceStream stream) override { backend_.wait_for_stream(stream); }
  std::string capture_obstacle() const override { return backend_.capture_obstacle(); }

 private:
  StreamBackend& backend_;
  BeforeCollective before_;
  std::uint64_t launched_ = 0;  // last sequence number handed to the backend
};

}  // namespace

std::unique_ptr<Dispatcher> make_engine_dispatcher(HostBackend& backend, Dispatcher::BeforeCollective before) {
  return std::make_unique<EngineDispatcher>(backend, std::move(before));
}

std::unique_ptr<Dispatcher> make_direct_dispatcher(StreamBackend& backend, Dispatcher::BeforeCollective before) {
  return std::make_unique<DirectDispatcher>(backend, std::move(before));
}

}  // namespace microddp::comm
