// nccl_api.cpp — the NCCL functions of the toolkit's nccl.h that microddp uses (plus ncclReduce and the
// communicator queries), implemented on the emulated CUDA runtime. Thin: argument checks, group
// recording, then launch.hpp / bootstrap.hpp do the work.
//
// Contract (beyond nccl.h):
//   * Every buffer argument with a non-zero count must be device memory of the communicator's device
//     (cuda_emu::lookup_pointer), large enough for the call; counts, types, ops, roots and peers are
//     checked too. A failed check returns ncclInvalidArgument / ncclInvalidUsage at the call, enqueues
//     nothing, and leaves the communicator usable. A communicator with an asynchronous error refuses
//     new calls with that error.
//   * Collectives and ncclSend/ncclRecv return as soon as their work is enqueued on the stream.
//   * Groups nest; calls are recorded and launched at the outermost ncclGroupEnd, one fused operation per
//     communicator. If a call inside the group failed its check, ncclGroupEnd launches nothing and
//     returns that error (NCCL discards such a group too). ncclCommInitRank inside a group is refused
//     (ncclInvalidUsage): the emulator initialises one rank per call.
//   * ncclGetLastError(comm): the communicator's asynchronous error message if it has one, else the
//     process's last error message. ncclCommDestroy/ncclCommAbort accept NULL.
#include <nccl.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "bootstrap.hpp"
#include "comm.hpp"
#include "emu_internal.hpp"
#include "launch.hpp"
#include "operation.hpp"
#include "status.hpp"
#include "types.hpp"
#include "version.hpp"

// The opaque handle of nccl.h.
struct ncclComm {
  std::shared_ptr<cuda_emu::nccl::Comm> impl;
};

namespace cuda_emu::nccl {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<std::pair<std::shared_ptr<Comm>, Call>> calls;
  Status error;  // first failed call inside the group
};
thread_local GroupState t_group;

ncclResult_t report(const Status& st) {
  if (!st.ok()) {
    set_last_error(st.message);
    warn(st.message);
  }
  return st.code;
}

// Runs an API body; nothing may escape an extern "C" function.
template <typename Body>
ncclResult_t guarded(const char* fn, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return report(fail(ncclSystemError, cat(fn, ": out of host memory")));
  } catch (const std::exception& e) {
    return report(fail(ncclInternalError, cat(fn, ": ", e.what())));
  }
}

Status check_comm(ncclComm_t comm, const char* fn) {
  if (comm == nullptr || !comm->impl) return fail(ncclInvalidArgument, cat(fn, ": comm is NULL"));
  if (Status err = comm->impl->async_error(); !err.ok()) {
    return fail(err.code, cat(fn, ": the communicator failed earlier and must be aborted: ", err.message));
  }
  return success();
}

Status check_dtype(ncclDataType_t t, const char* fn) {
  if (dtype_bytes(t) == 0) {
    return fail(ncclInvalidArgument, cat(fn, ": data type ", static_cast<int>(t), " (", dtype_name(t),
                                         ") is not supported by the emulated NCCL"));
  }
  return success();
}

Status check_op(ncclRedOp_t op, const char* fn) {
  if (!op_supported(op)) {
    return fail(ncclInvalidArgument, cat(fn, ": reduction op ", static_cast<int>(op),
                                         " is not supported (Sum, Prod, Max, Min, Avg; no custom ops)"));
  }
  return success();
}

Status check_rank_arg(int value, int nranks, const char* fn, const char* what) {
  if (value < 0 || value >= nranks) {
    return fail(ncclInvalidArgument,
                cat(fn, ": ", what, " ", value, " is out of range for a communicator of ", nranks, " ranks"));
  }
  return success();
}

// count * factor elements of `t`, in bytes; false on overflow.
bool buffer_bytes(std::size_t count, std::size_t factor, ncclDataType_t t, std::size_t& bytes) {
  const std::size_t es = dtype_bytes(t);
  if (factor != 0 && count > std::numeric_limits<std::size_t>::max() / factor) return false;
  const std::size_t elements = count * factor;
  if (es != 0 && elements > std::numeric_limits<std::size_t>::max() / es) return false;
  bytes = elements * es;
  return true;
}

const char* memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::Device:
      return "device memory";
    case MemoryKind::PinnedHost:
      return "pinned host memory";
    case MemoryKind::Unregistered:
      return "not allocated by the CUDA runtime: a host pointer?";
  }
  return "unknown memory";
}

// `count * factor` elements at p must be device memory of the communicator's device.
Status check_buffer(const Comm& c, const void* p, std::size_t count, std::size_t factor, ncclDataType_t t,
                    const char* fn, const char* which) {
  std::size_t bytes = 0;
  if (!buffer_bytes(count, factor, t, bytes)) return fail(ncclInvalidArgument, cat(fn, ": ", which, " size overflows"));
  if (bytes == 0) return success();
  if (p == nullptr) return fail(ncclInvalidArgument, cat(fn, ": ", which, " is NULL with count ", count));
  const PointerInfo info = lookup_pointer(p);
  if (info.kind != MemoryKind::Device) {
    return fail(ncclInvalidArgument,
                cat(fn, ": ", which, " ", p, " is not device memory (", memory_kind_name(info.kind),
                    "); NCCL buffers must be memory of the communicator's device ", c.device()));
  }
  if (info.device != c.device()) {
    return fail(ncclInvalidArgument, cat(fn, ": ", which, " ", p, " is memory of device ", info.device,
                                         ", but the communicator (rank ", c.rank(), ") is on device ", c.device()));
  }
  const auto offset = static_cast<std::size_t>(static_cast<const char*>(p) - static_cast<const char*>(info.base));
  if (offset + bytes > info.bytes || offset + bytes < offset) {
    return fail(ncclInvalidArgument, cat(fn, ": ", which, " needs ", bytes, " bytes from offset ", offset, " of a ",
                                         info.bytes, "-byte allocation"));
  }
  return success();
}

// Records the call in the open group or launches it alone.
ncclResult_t submit(ncclComm_t comm, const Call& call) {
  if (t_group.depth > 0) {
    t_group.calls.emplace_back(comm->impl, call);
    return ncclSuccess;
  }
  return report(launch(comm->impl, {call}));
}

// A failed check inside a group also dooms the group (ncclGroupEnd reports it).
ncclResult_t refuse(const Status& st) {
  if (t_group.depth > 0 && t_group.error.ok()) t_group.error = st;
  return report(st);
}

#define EMU_CHECK(expr)                           \
  do {                                            \
    if (Status emu_st_ = (expr); !emu_st_.ok()) { \
      return refuse(emu_st_);                     \
    }                                             \
  } while (0)

}  // namespace
}  // namespace cuda_emu::nccl

using namespace cuda_emu::nccl;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return report(fail(ncclInvalidArgument, "ncclGetVersion: version is NULL"));
  return report(emulated_version(*version));
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  return guarded("ncclGetUniqueId", [&] {
    if (id == nullptr) return report(fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL"));
    return report(start_bootstrap_root(*id));
  });
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return guarded("ncclCommInitRank", [&] {
    if (comm == nullptr) return report(fail(ncclInvalidArgument, "ncclCommInitRank: comm is NULL"));
    *comm = nullptr;
    if (t_group.depth > 0) {
      return report(fail(ncclInvalidUsage,
                         "ncclCommInitRank inside ncclGroupStart/ncclGroupEnd is not supported by the "
                         "emulated NCCL (one rank per call, from its own thread or process)"));
    }
    if (nranks < 1) return report(fail(ncclInvalidArgument, cat("ncclCommInitRank: nranks ", nranks, " < 1")));
    if (Status st = check_rank_arg(rank, nranks, "ncclCommInitRank", "rank"); !st.ok()) return report(st);
    std::shared_ptr<Comm> impl;
    if (Status st = bootstrap_rank(id, nranks, rank, cuda_emu::current_device(), impl); !st.ok()) return report(st);
    *comm = new ncclComm{std::move(impl)};
    return ncclSuccess;
  });
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return guarded("ncclCommDestroy", [&] {
    if (comm == nullptr) return ncclSuccess;
    if (comm->impl) comm->impl->destroy();
    delete comm;
    return ncclSuccess;
  });
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return guarded("ncclCommAbort", [&] {
    if (comm == nullptr) return ncclSuccess;
    if (comm->impl) comm->impl->abort();
    delete comm;
    return ncclSuccess;
  });
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (comm == nullptr || !comm->impl || async_error == nullptr) {
    return report(fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm or asyncError is NULL"));
  }
  *async_error = comm->impl->async_error().code;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || !comm->impl || count == nullptr)
    return report(fail(ncclInvalidArgument, "ncclCommCount: NULL argument"));
  *count = comm->impl->size();
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr || !comm->impl || device == nullptr) {
    return report(fail(ncclInvalidArgument, "ncclCommCuDevice: NULL argument"));
  }
  *device = comm->impl->device();
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || !comm->impl || rank == nullptr) {
    return report(fail(ncclInvalidArgument, "ncclCommUserRank: NULL argument"));
  }
  *rank = comm->impl->rank();
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=WARN for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=WARN for details)";
    case ncclInternalError:
      return "internal error (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  if (comm != nullptr && comm->impl) {
    if (Status err = comm->impl->async_error(); !err.ok()) return thread_copy(err.message);
  }
  return last_error_for_this_thread();
}

ncclResult_t ncclGroupStart() {
  ++t_group.depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  return guarded("ncclGroupEnd", [&] {
    if (t_group.depth == 0) return report(fail(ncclInvalidUsage, "ncclGroupEnd without a matching ncclGroupStart"));
    if (--t_group.depth > 0) return ncclSuccess;
    auto calls = std::move(t_group.calls);
    const Status error = std::move(t_group.error);
    t_group = GroupState{};
    if (!error.ok()) {
      return report(
          fail(error.code, cat("ncclGroupEnd: nothing launched, a call in the group failed: ", error.message)));
    }
    // One fused operation per communicator, in the order the communicators first appear.
    std::vector<std::pair<std::shared_ptr<Comm>, std::vector<Call>>> per_comm;
    for (auto& [comm, call] : calls) {
      auto it = std::find_if(per_comm.begin(), per_comm.end(), [&](const auto& e) { return e.first == comm; });
      if (it == per_comm.end()) it = per_comm.insert(per_comm.end(), {comm, {}});
      it->second.push_back(call);
    }
    for (const auto& [comm, list] : per_comm) {
      if (Status st = check_launchable(*comm, list); !st.ok()) return report(st);
    }
    ncclResult_t result = ncclSuccess;
    for (auto& [comm, list] : per_comm) {
      const ncclResult_t rc = report(launch(comm, std::move(list)));
      if (result == ncclSuccess) result = rc;
    }
    return result;
  });
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* fn = "ncclAllReduce";
  return guarded(fn, [&] {
    EMU_CHECK(check_comm(comm, fn));
    const Comm& c = *comm->impl;
    EMU_CHECK(check_dtype(datatype, fn));
    EMU_CHECK(check_op(op, fn));
    EMU_CHECK(check_buffer(c, sendbuff, count, 1, datatype, fn, "sendbuff"));
    EMU_CHECK(check_buffer(c, recvbuff, count, 1, datatype, fn, "recvbuff"));
    return submit(comm, Call{CallType::AllReduce, sendbuff, recvbuff, count, datatype, op, -1, -1, stream});
  });
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* fn = "ncclReduceScatter";
  return guarded(fn, [&] {
    EMU_CHECK(check_comm(comm, fn));
    const Comm& c = *comm->impl;
    EMU_CHECK(check_dtype(datatype, fn));
    EMU_CHECK(check_op(op, fn));
    EMU_CHECK(check_buffer(c, sendbuff, recvcount, static_cast<std::size_t>(c.size()), datatype, fn, "sendbuff"));
    EMU_CHECK(check_buffer(c, recvbuff, recvcount, 1, datatype, fn, "recvbuff"));
    return submit(comm, Call{CallType::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, -1, stream});
  });
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* fn = "ncclAllGather";
  return guarded(fn, [&] {
    EMU_CHECK(check_comm(comm, fn));
    const Comm& c = *comm->impl;
    EMU_CHECK(check_dtype(datatype, fn));
    EMU_CHECK(check_buffer(c, sendbuff, sendcount, 1, datatype, fn, "sendbuff"));
    EMU_CHECK(check_buffer(c, recvbuff, sendcount, static_cast<std::size_t>(c.size()), datatype, fn, "recvbuff"));
    return submit(comm, Call{CallType::AllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, -1, -1, stream});
  });
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* fn = "ncclBroadcast";
  return guarded(fn, [&] {
    EMU_CHECK(check_comm(comm, fn));
    const Comm& c = *comm->impl;
    EMU_CHECK(check_dtype(datatype, fn));
    EMU_CHECK(check_rank_arg(root, c.size(), fn, "root"));
    if (c.rank() == root) EMU_CHECK(check_buffer(c, sendbuff, count, 1, datatype, fn, "sendbuff"));
    EMU_CHECK(check_buffer(c, recvbuff, count, 1, datatype, fn, "recvbuff"));
    return submit(comm, Call{CallType::Broadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, -1, stream});
  });
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* fn = "ncclReduce";
  return guarded(fn, [&] {
    EMU_CHECK(check_comm(comm, fn));
    const Comm& c = *comm->impl;
    EMU_CHECK(check_dtype(datatype, fn));
    EMU_CHECK(check_op(op, fn));
    EMU_CHECK(check_rank_arg(root, c.size(), fn, "root"));
    EMU_CHECK(check_buffer(c, sendbuff, count, 1, datatype, fn, "sendbuff"));
    if (c.rank() == root) EMU_CHECK(check_buffer(c, recvbuff, count, 1, datatype, fn, "recvbuff"));
    return submit(comm, Call{CallType::Reduce, sendbuff, recvbuff, count, datatype, op, root, -1, stream});
  });
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  constexpr const char* fn = "ncclSend";
  return guarded(fn, [&] {
    EMU_CHECK(check_comm(comm, fn));
    const Comm& c = *comm->impl;
    EMU_CHECK(check_dtype(datatype, fn));
    EMU_CHECK(check_rank_arg(peer, c.size(), fn, "peer"));
    EMU_CHECK(check_buffer(c, sendbuff, count, 1, datatype, fn, "sendbuff"));
    return submit(comm, Call{CallType::Send, sendbuff, nullptr, count, datatype, ncclSum, -1, peer, stream});
  });
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  constexpr const char* fn = "ncclRecv";
  return guarded(fn, [&] {
    EMU_CHECK(check_comm(comm, fn));
    const Comm& c = *comm->impl;
    EMU_CHECK(check_dtype(datatype, fn));
    EMU_CHECK(check_rank_arg(peer, c.size(), fn, "peer"));
    EMU_CHECK(check_buffer(c, recvbuff, count, 1, datatype, fn, "recvbuff"));
    return submit(comm, Call{CallType::Recv, nullptr, recvbuff, count, datatype, ncclSum, -1, peer, stream});
  });
}

}  // extern "C"
