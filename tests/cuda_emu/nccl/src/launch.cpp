// launch.cpp — enqueueing fused operations on their streams (launch.hpp).
#include "launch.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "emu_internal.hpp"
#include "types.hpp"
#include "version.hpp"

namespace cuda_emu::nccl {

namespace {

// Joins the streams of a multi-stream operation: the first stream runs it once every other stream has
// arrived at the operation; the others wait until it has run. Waits re-check the communicator's abort
// flag every kPollSliceMs, so an abort releases all of them.
class StreamJoin {
 public:
  explicit StreamJoin(std::size_t others) : waiting_for_(others) {}

  void arrive_and_wait(const Comm& comm) {
    std::unique_lock lock(m_);
    --waiting_for_;
    cv_.notify_all();
    while (!done_ && !comm.aborted()) cv_.wait_for(lock, std::chrono::milliseconds(kPollSliceMs));
  }
  void wait_for_others(const Comm& comm) {
    std::unique_lock lock(m_);
    while (waiting_for_ > 0 && !comm.aborted()) cv_.wait_for(lock, std::chrono::milliseconds(kPollSliceMs));
  }
  void finish() {
    std::lock_guard lock(m_);
    done_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t waiting_for_;
  bool done_ = false;
};

}  // namespace

Status check_launchable(const Comm& comm, const std::vector<Call>& calls) {
  std::vector<const Call*> sends, recvs;
  for (const Call& c : calls) {
    if (c.type == CallType::Send && c.peer == comm.rank()) sends.push_back(&c);
    if (c.type == CallType::Recv && c.peer == comm.rank()) recvs.push_back(&c);
  }
  const std::size_t pairs = std::min(sends.size(), recvs.size());
  for (std::size_t i = 0; i < pairs; ++i) {
    if (sends[i]->count != recvs[i]->count || sends[i]->dtype != recvs[i]->dtype) {
      return fail(ncclInvalidUsage, cat("rank ", comm.rank(), ": ncclSend to itself #", i, " (count ", sends[i]->count,
                                        ", ", dtype_name(sends[i]->dtype), ") does not match ncclRecv from itself #", i,
                                        " (count ", recvs[i]->count, ", ", dtype_name(recvs[i]->dtype), ")"));
    }
  }
  if (sends.size() != recvs.size()) {
    return fail(ncclInvalidUsage, cat("rank ", comm.rank(), ": ", sends.size(), " ncclSend(s) to itself but ",
                                      recvs.size(), " ncclRecv(s) from itself; they must pair up within one group"));
  }
  return success();
}

namespace {

// Numbers an operation in issue order: wire sequence numbers for its calls, and its ticket.
std::uint64_t number(Comm& comm, std::vector<Call>& calls) {
  for (Call& c : calls) {
    if (c.type == CallType::Send) {
      c.seq = comm.next_send_seq(c.peer);
    } else if (c.type == CallType::Recv) {
      c.seq = comm.next_recv_seq(c.peer);
    } else {
      c.seq = comm.next_collective_seq();
    }
  }
  return comm.take_ticket();
}

// An NCCL older than 2.9.6 (NCCL_EMU_VERSION) cannot be captured into a CUDA graph: refused before
// anything is recorded or numbered, so the ranks stay in step.
Status check_capturable(const std::vector<cudaStream_t>& streams, const char* what) {
  int version = 0;
  if (Status st = emulated_version(version); !st.ok()) return st;
  if (version >= kFirstCapturableVersion) return success();
  for (cudaStream_t s : streams) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone) {
      return fail(ncclInvalidUsage, cat(what, ": NCCL ", version / 10000, ".", version / 100 % 100, ".", version % 100,
                                        " (NCCL_EMU_VERSION) cannot be captured into a CUDA graph (2.9.6 or later)"));
    }
  }
  return success();
}

}  // namespace

Status launch(const std::shared_ptr<Comm>& comm, std::vector<Call> calls) {
  if (Status st = check_launchable(*comm, calls); !st.ok()) return st;
  std::vector<cudaStream_t> streams;
  for (const Call& c : calls) {
    if (std::find(streams.begin(), streams.end(), c.stream) == streams.end()) streams.push_back(c.stream);
  }
  const char* what = calls.size() == 1 ? call_name(calls.front().type) : "ncclGroupEnd";
  if (Status st = check_capturable(streams, what); !st.ok()) return st;
  // Streams that capture record one graph node; every launch of its graph numbers the operation
  // then (issue order on the host), so each replay is a new operation of the communicator.
  auto recorded_calls = std::make_shared<const std::vector<Call>>(calls);
  bool recorded = false;
  const cudaError_t captured = cuda_emu::capture_operation(
      streams, what,
      [comm, recorded_calls]() -> std::function<void()> {
        auto op = std::make_shared<std::vector<Call>>(*recorded_calls);
        const std::uint64_t ticket = number(*comm, *op);
        return [comm, op, ticket] { comm->run_in_order(ticket, [&] { return execute(*comm, *op); }); };
      },
      comm.get(), &recorded);
  if (captured != cudaSuccess) {
    return fail(ncclUnhandledCudaError,
                cat(what, ": the CUDA runtime refused the operation on its stream: ", cudaGetErrorName(captured)));
  }
  if (recorded) return success();
  const std::uint64_t ticket = number(*comm, calls);
  auto op = std::make_shared<const std::vector<Call>>(std::move(calls));
  auto body = [comm, op, ticket] { comm->run_in_order(ticket, [&] { return execute(*comm, *op); }); };
  std::shared_ptr<StreamJoin> join;
  try {
    if (streams.size() == 1) {
      cuda_emu::enqueue(streams.front(), what, body);
      return success();
    }
    join = std::make_shared<StreamJoin>(streams.size() - 1);
    for (std::size_t i = 1; i < streams.size(); ++i) {
      cuda_emu::enqueue(streams[i], "ncclGroupEnd (joined stream)", [join, comm] { join->arrive_and_wait(*comm); });
    }
    cuda_emu::enqueue(streams.front(), what, [join, comm, body] {
      join->wait_for_others(*comm);
      body();
      join->finish();
    });
  } catch (const std::exception& e) {
    if (join) join->finish();
    const Status st = fail(ncclUnhandledCudaError, cat(what, ": enqueueing on the stream failed: ", e.what()));
    comm->abandon(ticket, st);
    return st;
  }
  return success();
}

}  // namespace cuda_emu::nccl
