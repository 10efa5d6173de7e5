// hand_rolled_communicator.cpp — dispatch of the hand-rolled backends and `auto`'s thresholds.
#include "comm/hand_rolled_communicator.hpp"

#include <cstdlib>

#include "comm/mpi_check.hpp"
#include "comm/p2p_algorithms.hpp"
#include "core/error.hpp"

namespace microddp::comm {

namespace {

int comm_rank(MPI_Comm c) {
  int r = 0;
  MDDP_MPI_CHECK(MPI_Comm_rank(c, &r));
  return r;
}
int comm_size(MPI_Comm c) {
  int s = 0;
  MDDP_MPI_CHECK(MPI_Comm_size(c, &s));
  return s;
}

// Pipeline segment of the ring and the tree broadcast. Measured on an idle 2-core machine, np=2
// (docs/allreduce.md, "Segment size"): with many small segments in flight at once (256 KiB at
// 64 MiB = 128 outstanding messages per step; 64 KiB at 16 MiB) the ring collapsed to 0.55-0.6 GB/s
// busbw, while 1-32 MiB segments all gave 2.8-3.3 GB/s at 64 MiB. 4 MiB keeps a few segments per
// chunk for overlap at large sizes and is a single segment for messages of a few MiB.
constexpr std::int64_t kDefaultSegmentBytes = std::int64_t{4} << 20;

// auto: recursive doubling up to this many bytes, ring above. Crossover measured with
// `microddp bench collectives --backends mpi,ring,rd,naive,auto` at np=2 (docs/allreduce.md,
// "auto"): rd 6.4 us vs ring 11.0 us at 4 KiB, a tie at 16 KiB (19.1 vs 19.7 us), ring ahead at
// 64 KiB (19.5 vs 24.1 us).
constexpr std::int64_t kAutoRdMaxBytes = std::int64_t{16} << 10;

std::int64_t env_bytes(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  const long long b = std::atoll(v);
  MDDP_CHECK(b >= 1, name << "=" << v << " must be a positive byte count");
  return b;
}

}  // namespace

HandRolledCommunicator::HandRolledCommunicator(MPI_Comm parent, AllReduceAlgorithm algorithm)
    : Communicator(comm_rank(parent), comm_size(parent)),
      transport_(parent),
      algorithm_(algorithm),
      segment_bytes_(env_bytes("MICRODDP_RING_SEGMENT_BYTES", kDefaultSegmentBytes)),
      auto_rd_max_bytes_(env_bytes("MICRODDP_AUTO_RD_MAX_BYTES", kAutoRdMaxBytes)) {
  // Segments are single messages.
  if (segment_bytes_ > transport_.max_message_bytes()) segment_bytes_ = transport_.max_message_bytes();
}

HandRolledCommunicator::~HandRolledCommunicator() { shutdown(); }  // thread stops before transport_ dies

std::string_view HandRolledCommunicator::name() const {
  switch (algorithm_) {
    case AllReduceAlgorithm::Naive: return "naive";
    case AllReduceAlgorithm::Ring: return "ring";
    case AllReduceAlgorithm::RecursiveDoubling: return "rd";
    case AllReduceAlgorithm::Auto: return "auto";
  }
  return "?";
}

AllReduceAlgorithm HandRolledCommunicator::all_reduce_choice(std::int64_t bytes) const {
  if (algorithm_ != AllReduceAlgorithm::Auto) return algorithm_;
  return bytes <= auto_rd_max_bytes_ ? AllReduceAlgorithm::RecursiveDoubling : AllReduceAlgorithm::Ring;
}

void HandRolledCommunicator::execute(const CollectiveCall& call) {
  MDDP_CHECK(call.send.device == core::Device::Host && call.recv.device == core::Device::Host,
             name() << " backend: " << collective_name(call.kind)
                    << " on a device buffer (this backend moves host memory only)");
  P2pTransport& t = transport_;
  t.begin(call.seq);
  switch (call.kind) {
    case CollectiveKind::Barrier: dissemination_barrier(t); return;
    case CollectiveKind::AllReduce:
      switch (all_reduce_choice(call.recv.bytes())) {
        case AllReduceAlgorithm::Naive: naive_all_reduce(t, call.send, call.recv, call.op); return;
        case AllReduceAlgorithm::RecursiveDoubling: rd_all_reduce(t, call.send, call.recv, call.op); return;
        default: ring_all_reduce(t, call.send, call.recv, call.op, segment_bytes_); return;
      }
    case CollectiveKind::Broadcast: tree_broadcast(t, call.recv, call.root, segment_bytes_); return;
    case CollectiveKind::Scatter: linear_scatter(t, call.send, call.recv, call.root); return;
    case CollectiveKind::Gather: linear_gather(t, call.send, call.recv, call.root); return;
    case CollectiveKind::AllGather: ring_all_gather(t, call.send, call.recv, segment_bytes_); return;
    case CollectiveKind::ReduceScatter: ring_reduce_scatter(t, call.send, call.recv, call.op, segment_bytes_); return;
  }
  MDDP_CHECK(false, name() << " backend: unknown collective kind " << static_cast<int>(call.kind));
}

}  // namespace microddp::comm
