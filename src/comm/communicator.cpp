// communicator.cpp — argument validation shared by all backends, Mean handling, dispatch to the
// progress engine.
#include "comm/communicator.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "comm/mpi_runtime.hpp"
#include "core/log.hpp"

#include "core/error.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::comm {

using core::TensorView;

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::Barrier: return "barrier";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Scatter: return "scatter";
    case CollectiveKind::Gather: return "gather";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
  }
  return "?";
}

Communicator::Communicator(int rank, int size) : Communicator(rank, size, Dispatch::ProgressEngine) {}

Communicator::Communicator(int rank, int size, Dispatch dispatch) : rank_(rank), size_(size), dispatch_(dispatch) {
  MDDP_CHECK(size >= 1 && rank >= 0 && rank < size, "invalid rank " << rank << " of " << size);
  if (dispatch_ == Dispatch::ProgressEngine) {
    engine_ = std::make_unique<ProgressEngine>([this](const CollectiveCall& call) { execute_with_mean(call); });
  }
}

Communicator::~Communicator() { shutdown(); }

void Communicator::shutdown() {
  // Destroying the engine drains the queue and joins the thread; errors of unwaited work are lost
  // here by design (a destructor must not throw). Direct backends: wait for launched work likewise.
  if (dispatch_ == Dispatch::Direct && !shut_down_) {
    try {
      wait_launched();
    } catch (const std::exception&) {  // reported to whoever waited on the Work; nowhere to go here
    }
  }
  shut_down_ = true;
  engine_.reset();
  watchdog_.reset();
}

void Communicator::set_comm_timeout(double seconds) {
  if (!engine_) return;  // Direct dispatch without an override: nothing runs on our thread to watch
  synchronize();
  engine_->set_watchdog(nullptr);
  watchdog_.reset();
  if (seconds <= 0.0) return;
  watchdog_ = std::make_unique<CollectiveWatchdog>(seconds, [this, seconds](const CollectiveCall& c, double waited) {
    std::ostringstream os;
    os << "collective timeout on rank " << rank_ << ": " << collective_name(c.kind) << " seq=" << c.seq
       << " count=" << std::max(c.send.count, c.recv.count) << " dtype=" << core::dtype_name(c.recv.dtype)
       << " backend=" << name() << " has not completed after " << waited << " s (--comm-timeout " << seconds
       << " s): another rank did not reach this collective, issued a different one, or is stopped. Aborting the job.";
    core::log_line(core::LogLevel::Error, os.str());
    // MPI_Abort from this thread while the communication thread is blocked inside MPI: the one
    // MPI call that is allowed to cut across MPI_THREAD_SERIALIZED in practice, and the way the
    // launcher learns to kill every rank. (Open MPI 4.1's mpiexec itself occasionally deadlocks
    // after the ranks are gone; see docs/reliability.md.)
    MpiRuntime::abort_all(1);
  });
  engine_->set_watchdog(watchdog_.get());
}

Work Communicator::launch(const CollectiveCall&, Mode) {
  MDDP_CHECK(false, name() << ": launch() called on a backend without direct dispatch");
  return Work();
}

void Communicator::wait_launched() {}

void Communicator::execute_with_mean(const CollectiveCall& call) {
  if (call.op == ReduceOp::Mean && call.recv.device == core::Device::Host) {
    CollectiveCall sum = call;
    sum.op = ReduceOp::Sum;
    execute(sum);
    if (call.kind == CollectiveKind::AllReduce || call.kind == CollectiveKind::ReduceScatter) {
      kernels::host_scale(call.recv, 1.0 / static_cast<double>(size_));
    }
    return;
  }
  execute(call);
}

namespace {

void check_same_type(const TensorView& a, const TensorView& b, std::string_view what) {
  MDDP_CHECK(a.dtype == b.dtype, what << ": send dtype " << core::dtype_name(a.dtype) << " != recv dtype "
                                      << core::dtype_name(b.dtype));
  MDDP_CHECK(a.device == b.device, what << ": send and recv buffers are on different devices");
}

void check_buffer(const TensorView& v, std::string_view what) {
  MDDP_CHECK(v.count >= 0, what << ": negative count " << v.count);
  MDDP_CHECK(v.count == 0 || v.data != nullptr, what << ": null buffer with count " << v.count);
}

void check_op(ReduceOp op, core::DType dtype, std::string_view what) {
  MDDP_CHECK(op != ReduceOp::Mean || dtype == core::DType::F32 || dtype == core::DType::F64,
             what << ": mean needs a floating-point dtype, got " << core::dtype_name(dtype));
}

}  // namespace

Work Communicator::submit(CollectiveCall call, Mode mode) {
  MDDP_CHECK(!shut_down_, name() << ": communicator already shut down");
  if (dispatch_ == Dispatch::Direct) {
    call.seq = ++launched_;
    return launch(call, mode);
  }
  return engine_->submit(call, mode);
}

Work Communicator::all_reduce(TensorView send, TensorView recv, ReduceOp op, Mode mode) {
  check_buffer(send, "all_reduce send");
  check_buffer(recv, "all_reduce recv");
  check_same_type(send, recv, "all_reduce");
  check_op(op, recv.dtype, "all_reduce");
  MDDP_CHECK(send.count == recv.count, "all_reduce: send count " << send.count << " != recv count " << recv.count);
  return submit(CollectiveCall{CollectiveKind::AllReduce, send, recv, op, 0, 0}, mode);
}

Work Communicator::barrier(Mode mode) { return submit(CollectiveCall{CollectiveKind::Barrier, {}, {}, ReduceOp::Sum, 0, 0}, mode); }

Work Communicator::broadcast(TensorView buf, int root, Mode mode) {
  check_buffer(buf, "broadcast");
  MDDP_CHECK(root >= 0 && root < size_, "broadcast: root " << root << " outside [0, " << size_ << ")");
  return submit(CollectiveCall{CollectiveKind::Broadcast, buf, buf, ReduceOp::Sum, root, 0}, mode);
}

Work Communicator::scatter(TensorView send, TensorView recv, int root, Mode mode) {
  MDDP_CHECK(root >= 0 && root < size_, "scatter: root " << root << " outside [0, " << size_ << ")");
  check_buffer(recv, "scatter recv");
  if (rank_ == root) {
    check_buffer(send, "scatter send");
    check_same_type(send, recv, "scatter");
    MDDP_CHECK(send.count == recv.count * size_,
               "scatter: root send count " << send.count << " != recv count " << recv.count << " x " << size_ << " ranks");
  }
  return submit(CollectiveCall{CollectiveKind::Scatter, send, recv, ReduceOp::Sum, root, 0}, mode);
}

Work Communicator::gather(TensorView send, TensorView recv, int root, Mode mode) {
  MDDP_CHECK(root >= 0 && root < size_, "gather: root " << root << " outside [0, " << size_ << ")");
  check_buffer(send, "gather send");
  if (rank_ == root) {
    check_buffer(recv, "gather recv");
    check_same_type(send, recv, "gather");
    MDDP_CHECK(recv.count == send.count * size_,
               "gather: root recv count " << recv.count << " != send count " << send.count << " x " << size_ << " ranks");
  }
  return submit(CollectiveCall{CollectiveKind::Gather, send, recv, ReduceOp::Sum, root, 0}, mode);
}

Work Communicator::all_gather(TensorView send, TensorView recv, Mode mode) {
  check_buffer(send, "all_gather send");
  check_buffer(recv, "all_gather recv");
  check_same_type(send, recv, "all_gather");
  MDDP_CHECK(recv.count == send.count * size_,
             "all_gather: recv count " << recv.count << " != send count " << send.count << " x " << size_ << " ranks");
  return submit(CollectiveCall{CollectiveKind::AllGather, send, recv, ReduceOp::Sum, 0, 0}, mode);
}

Work Communicator::reduce_scatter(TensorView send, TensorView recv, ReduceOp op, Mode mode) {
  check_buffer(send, "reduce_scatter send");
  check_buffer(recv, "reduce_scatter recv");
  check_same_type(send, recv, "reduce_scatter");
  check_op(op, recv.dtype, "reduce_scatter");
  MDDP_CHECK(send.count == recv.count * size_, "reduce_scatter: send count " << send.count << " != recv count "
                                                                             << recv.count << " x " << size_ << " ranks");
  return submit(CollectiveCall{CollectiveKind::ReduceScatter, send, recv, op, 0, 0}, mode);
}

void Communicator::synchronize() {
  MDDP_CHECK(!shut_down_, name() << ": communicator already shut down");
  if (dispatch_ == Dispatch::Direct) {
    wait_launched();
    return;
  }
  engine_->wait_all();
}

std::uint64_t Communicator::collectives_issued() const {
  if (dispatch_ == Dispatch::Direct) return launched_;
  return engine_ ? engine_->submitted() : 0;
}

}  // namespace microddp::comm
