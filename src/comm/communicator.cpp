// communicator.cpp — what every backend shares: argument validation, the fault hooks, desync
// detection; the dispatcher chosen by the backend's kind does the rest (communicator.hpp).
#include "comm/communicator.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace microddp::comm {

using core::TensorView;

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce:
      return "all_reduce";
    case CollectiveKind::Barrier:
      return "barrier";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::Scatter:
      return "scatter";
    case CollectiveKind::Gather:
      return "gather";
    case CollectiveKind::AllGather:
      return "all_gather";
    case CollectiveKind::ReduceScatter:
      return "reduce_scatter";
  }
  return "?";
}

Communicator::Communicator(Common, std::unique_ptr<Backend> backend, const core::FaultPlan& faults)
    : backend_(std::move(backend)) {
  MDDP_CHECK(backend_ != nullptr, "a communicator needs a backend");
  // The plan is read once here, so a collective pays one comparison per hook, not a plan lookup.
  for (const core::ArmedFault& f : faults.armed()) {
    if (f.rank != rank() || f.occurrence < 1) continue;
    if (f.point == comm_fault_point::kExit) {
      fault_exit_seq_ = static_cast<std::uint64_t>(f.occurrence);
      fault_exit_code_ = f.arg.empty() ? comm_fault_point::kDefaultExitCode : std::stoi(f.arg);
    } else if (f.point == comm_fault_point::kExtraCollective) {
      fault_extra_seq_ = static_cast<std::uint64_t>(f.occurrence);
    }
  }
}

// The backend's kind picks the dispatcher, here and nowhere else (the static_casts restore the type
// the public constructor was given).
Communicator::Communicator(std::unique_ptr<HostBackend> backend, const core::FaultPlan& faults)
    : Communicator(Common{}, std::move(backend), faults) {
  dispatcher_ = make_engine_dispatcher(static_cast<HostBackend&>(*backend_), before_hook());
}

Communicator::Communicator(std::unique_ptr<StreamBackend> backend, const core::FaultPlan& faults)
    : Communicator(Common{}, std::move(backend), faults) {
  dispatcher_ = make_direct_dispatcher(static_cast<StreamBackend&>(*backend_), before_hook());
}

// The members' order does the work (communicator.hpp): the dispatcher drains and stops first.
Communicator::~Communicator() = default;

void Communicator::set_comm_timeout(double seconds) { dispatcher_->set_comm_timeout(seconds); }
void Communicator::set_compute_stream(core::DeviceStream stream) { dispatcher_->set_compute_stream(stream); }
bool Communicator::completes_in_stream_order() const { return dispatcher_->completes_in_stream_order(); }
void Communicator::order_compute_after(const Work& work) { dispatcher_->order_compute_after(work); }
void Communicator::wait_for_stream(core::DeviceStream stream) { dispatcher_->wait_for_stream(stream); }
std::string Communicator::capture_obstacle() const { return dispatcher_->capture_obstacle(); }

void Communicator::attach_sync_comm(MPI_Comm parent) {
  MDDP_CHECK(sync_ == nullptr && collectives_issued() == 0,
             name() << ": attach_sync_comm() must be called once, before the first collective");
  sync_ = std::make_unique<SyncChecker>(parent);
}

void Communicator::before_collective(const CollectiveCall& call) {
  if (call.seq == fault_exit_seq_) {
    const int r = rank();
    std::fprintf(stderr,
                 "[microddp r%d/%d] fault injection (MICRODDP_FAULT_EXIT): rank %d exits with code %d before %.*s "
                 "seq=%llu\n",
                 r, size(), r, fault_exit_code_, static_cast<int>(collective_name(call.kind).size()),
                 collective_name(call.kind).data(), static_cast<unsigned long long>(call.seq));
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(fault_exit_code_);  // like a crash: no destructors, no MPI_Finalize
  }
  if (sync_) sync_->before_collective(call, debug_sync_.load(std::memory_order_relaxed), name());
}

void Communicator::set_debug_sync(bool on) {
  MDDP_CHECK(!on || sync_ != nullptr || size() == 1,
             name() << ": --debug-sync needs a communicator made by make_communicator (no sync communicator attached)");
  synchronize();  // collectives already queued keep the mode they were issued under
  if (sync_ != nullptr && size() > 1) {
    MDDP_AGREED_USAGE_CHECK(sync_->all_equal(on),
                            "--debug-sync is set on some ranks but not on others "
                            "(all ranks must be started with the same options)");
  }
  debug_sync_.store(on, std::memory_order_relaxed);
}

void Communicator::check_sync(std::string_view where, std::int64_t step) {
  synchronize();
  if (size() == 1 && sync_ == nullptr) return;  // nothing to compare with
  MDDP_CHECK(sync_ != nullptr, name() << ": sync check needs a communicator made by make_communicator");
  // The exchange runs on this thread while nothing is in flight (synchronize() above); the
  // dispatcher's timeout covers it like a collective, so a rank that never arrives cannot hang the
  // others.
  dispatcher_->begin_exchange(sync_->issued(), "sync check (all-gather of collective fingerprints)");
  const std::int64_t t0 = core::now_ns();
  try {
    if (step >= 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.*s step %lld", static_cast<int>(std::min<std::size_t>(where.size(), 64)),
                    where.data(), static_cast<long long>(step));
      sync_->check(buf, name());
    } else {
      sync_->check(where, name());
    }
  } catch (...) {
    dispatcher_->end_exchange();
    throw;
  }
  dispatcher_->end_exchange();
  ++sync_checks_;
  if (step >= 0) {
    const std::int64_t ns = core::now_ns() - t0;
    sync_ns_min_ = sync_timed_ == 0 ? ns : std::min(sync_ns_min_, ns);
    sync_ns_total_ += ns;
    ++sync_timed_;
  }
}

std::uint64_t Communicator::sync_history() const { return sync_ ? sync_->history() : kEmptyHistory; }

Communicator::SyncCheckStats Communicator::sync_check_stats() const {
  SyncCheckStats s;
  s.checks = sync_checks_;
  s.timed = sync_timed_;
  if (sync_timed_ > 0) {
    s.min_ms = static_cast<double>(sync_ns_min_) * 1e-6;
    s.mean_ms = static_cast<double>(sync_ns_total_) * 1e-6 / static_cast<double>(sync_timed_);
  }
  return s;
}

namespace {

void check_same_type(const TensorView& a, const TensorView& b, std::string_view what) {
  MDDP_CHECK(a.dtype == b.dtype,
             what << ": send dtype " << core::dtype_name(a.dtype) << " != recv dtype " << core::dtype_name(b.dtype));
  MDDP_CHECK(a.device == b.device, what << ": send and recv buffers are on different devices");
}

void check_buffer(const TensorView& v, std::string_view what) {
  MDDP_CHECK(v.count >= 0, what << ": negative count " << v.count);
  MDDP_CHECK(v.count == 0 || v.data != nullptr, what << ": null buffer with count " << v.count);
}

void check_op(ReduceOp op, core::DType dtype, std::string_view what) {
  MDDP_CHECK(op != ReduceOp::Mean || dtype == core::DType::F32 || dtype == core::DType::F64,
             what << ": mean needs a 32- or 64-bit floating-point dtype, got " << core::dtype_name(dtype));
}

}  // namespace

Work Communicator::submit(CollectiveCall call, Mode mode) {
  if (fault_extra_seq_ != 0 && collectives_issued() + 1 == fault_extra_seq_) {
    fault_extra_seq_ = 0;
    const int r = rank();
    std::fprintf(stderr,
                 "[microddp r%d/%d] fault injection (MICRODDP_FAULT_EXTRA_COLLECTIVE): rank %d issues an extra "
                 "empty all_reduce as its collective %llu\n",
                 r, size(), r, static_cast<unsigned long long>(collectives_issued() + 1));
    std::fflush(stderr);
    submit(CollectiveCall{CollectiveKind::AllReduce, TensorView(nullptr, 0, core::DType::F32),
                          TensorView(nullptr, 0, core::DType::F32), ReduceOp::Sum, 0, 0},
           Mode::Sync);
  }
  return dispatcher_->submit(call, mode);
}

Work Communicator::all_reduce(TensorView send, TensorView recv, ReduceOp op, Mode mode) {
  check_buffer(send, "all_reduce send");
  check_buffer(recv, "all_reduce recv");
  check_same_type(send, recv, "all_reduce");
  check_op(op, recv.dtype, "all_reduce");
  MDDP_CHECK(send.count == recv.count, "all_reduce: send count " << send.count << " != recv count " << recv.count);
  return submit(CollectiveCall{CollectiveKind::AllReduce, send, recv, op, 0, 0}, mode);
}

Work Communicator::barrier(Mode mode) {
  return submit(CollectiveCall{CollectiveKind::Barrier, {}, {}, ReduceOp::Sum, 0, 0}, mode);
}

Work Communicator::broadcast(TensorView buf, int root, Mode mode) {
  check_buffer(buf, "broadcast");
  MDDP_CHECK(root >= 0 && root < size(), "broadcast: root " << root << " outside [0, " << size() << ")");
  return submit(CollectiveCall{CollectiveKind::Broadcast, buf, buf, ReduceOp::Sum, root, 0}, mode);
}

Work Communicator::scatter(TensorView send, TensorView recv, int root, Mode mode) {
  MDDP_CHECK(root >= 0 && root < size(), "scatter: root " << root << " outside [0, " << size() << ")");
  check_buffer(recv, "scatter recv");
  if (rank() == root) {
    check_buffer(send, "scatter send");
    check_same_type(send, recv, "scatter");
    MDDP_CHECK(send.count == recv.count * size(), "scatter: root send count " << send.count << " != recv count "
                                                                              << recv.count << " x " << size()
                                                                              << " ranks");
  }
  return submit(CollectiveCall{CollectiveKind::Scatter, send, recv, ReduceOp::Sum, root, 0}, mode);
}

Work Communicator::gather(TensorView send, TensorView recv, int root, Mode mode) {
  MDDP_CHECK(root >= 0 && root < size(), "gather: root " << root << " outside [0, " << size() << ")");
  check_buffer(send, "gather send");
  if (rank() == root) {
    check_buffer(recv, "gather recv");
    check_same_type(send, recv, "gather");
    MDDP_CHECK(recv.count == send.count * size(), "gather: root recv count " << recv.count << " != send count "
                                                                             << send.count << " x " << size()
                                                                             << " ranks");
  }
  return submit(CollectiveCall{CollectiveKind::Gather, send, recv, ReduceOp::Sum, root, 0}, mode);
}

Work Communicator::all_gather(TensorView send, TensorView recv, Mode mode) {
  check_buffer(send, "all_gather send");
  check_buffer(recv, "all_gather recv");
  check_same_type(send, recv, "all_gather");
  MDDP_CHECK(recv.count == send.count * size(),
             "all_gather: recv count " << recv.count << " != send count " << send.count << " x " << size() << " ranks");
  return submit(CollectiveCall{CollectiveKind::AllGather, send, recv, ReduceOp::Sum, 0, 0}, mode);
}

Work Communicator::reduce_scatter(TensorView send, TensorView recv, ReduceOp op, Mode mode) {
  check_buffer(send, "reduce_scatter send");
  check_buffer(recv, "reduce_scatter recv");
  check_same_type(send, recv, "reduce_scatter");
  check_op(op, recv.dtype, "reduce_scatter");
  MDDP_CHECK(send.count == recv.count * size(), "reduce_scatter: send count " << send.count << " != recv count "
                                                                              << recv.count << " x " << size()
                                                                              << " ranks");
  return submit(CollectiveCall{CollectiveKind::ReduceScatter, send, recv, op, 0, 0}, mode);
}

void Communicator::synchronize() { dispatcher_->synchronize(); }

std::uint64_t Communicator::collectives_issued() const { return dispatcher_->submitted(); }

}  // namespace microddp::comm
