// mpi_backend.cpp — the `mpi` backend: each collective is the MPI library's own, run on a
// private MPI_Comm_dup of the parent (our traffic can never match a user's messages on the parent)
// with MPI_ERRORS_RETURN, so MPI failures reach us as core::Error instead of aborting inside MPI.
//
// Contract (beyond backend.hpp and the buffer conventions in types.hpp):
//   * Device buffers are staged (device_staged_backend.hpp); everything below sees host memory (or
//     device memory with CUDA-aware MPI).
//   * A collective whose element count is 0 makes no MPI call and never dereferences its (possibly
//     null) buffers. Every rank sees the same count, so every rank skips it alike.
//   * 64-bit counts are never truncated. With L = max_chunk_count_ (INT_MAX unless a test lowers it):
//       all_reduce, broadcast     contiguous chunks of <= L elements, one MPI call each.
//                                 Cost: ceil(count / L) latencies, same bytes.
//       scatter, gather,          one call when n*c <= L; otherwise sub-blocks of m = max(1, L / n)
//       all_gather                elements of every rank's block per call. The n-block side is a
//                                 derived type (m contiguous elements resized to an extent of c
//                                 elements), so rank r's piece is addressed at r*c + offset with no
//                                 pack/unpack copies. Cost: ceil(c / m) latencies, same bytes.
//       reduce_scatter            one MPI_Reduce_scatter_block when n*c <= L; otherwise, for each
//                                 destination d = 0..n-1, MPI_Reduce of block d onto rank d in
//                                 chunks of <= L. Correctness first: that is n*ceil(c / L) rooted
//                                 reductions, i.e. n times the latency of one reduce-scatter and, with
//                                 tree reductions, up to ~log2(n) times its traffic. Only taken when one
//                                 call would exceed L elements (beyond INT_MAX elements by default).
//     The total (n*c) rather than the per-rank block is bounded because some MPI implementations
//     compute a collective's total element count in an int internally.
//   * In-place variants map to MPI_IN_PLACE exactly as types.hpp defines them.
#include "comm/backends/mpi_backend.hpp"

#include <algorithm>

#include "comm/transport/mpi_check.hpp"
#include "comm/transport/mpi_comm_size.hpp"
#include "core/error.hpp"

namespace microddp::comm {

using core::TensorView;

namespace {

std::int64_t elem_bytes(const TensorView& v) { return static_cast<std::int64_t>(core::dtype_bytes(v.dtype)); }

// m contiguous elements whose extent is a whole per-rank block of `block_count` elements, so that
// "1 of this type per rank" selects elements [offset, offset + m) of every rank's block.
class BlockPieceType {
 public:
  BlockPieceType(MPI_Datatype element, int m, std::int64_t block_bytes) {
    MPI_Datatype piece = MPI_DATATYPE_NULL;
    MDDP_MPI_CHECK(MPI_Type_contiguous(m, element, &piece));
    const int rc = MPI_Type_create_resized(piece, 0, static_cast<MPI_Aint>(block_bytes), &type_);
    MPI_Type_free(&piece);
    MDDP_MPI_CHECK(rc);
    MDDP_MPI_CHECK(MPI_Type_commit(&type_));
  }
  ~BlockPieceType() {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  BlockPieceType(const BlockPieceType&) = delete;
  BlockPieceType& operator=(const BlockPieceType&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// Everything a collective needs besides its call; one per execute().
struct Ctx {
  MPI_Comm comm;
  int rank;
  int size;
  std::int64_t limit;  // max elements per MPI call

  // Per-rank sub-block length for the block collectives when n*c exceeds the limit.
  std::int64_t piece() const { return std::max<std::int64_t>(1, limit / size); }
  bool fits_whole(std::int64_t c) const { return c <= limit / size; }  // n*c <= limit, overflow-free
};

void run_all_reduce(const Ctx& x, const CollectiveCall& call) {
  const std::int64_t count = call.recv.count;
  const bool in_place = call.send.data == call.recv.data;
  const MPI_Datatype t = mpi_datatype(call.recv.dtype);
  const MPI_Op op = mpi_op(call.op, call.recv.dtype);
  for (std::int64_t o = 0; o < count; o += x.limit) {
    const int m = to_mpi_int(std::min(x.limit, count - o));
    MDDP_MPI_CHECK(
        MPI_Allreduce(in_place ? MPI_IN_PLACE : call.send.address_of(o), call.recv.address_of(o), m, t, op, x.comm));
  }
}

void run_broadcast(const Ctx& x, const CollectiveCall& call) {
  const std::int64_t count = call.recv.count;
  const MPI_Datatype t = mpi_datatype(call.recv.dtype);
  for (std::int64_t o = 0; o < count; o += x.limit) {
    const int m = to_mpi_int(std::min(x.limit, count - o));
    MDDP_MPI_CHECK(MPI_Bcast(call.recv.address_of(o), m, t, call.root, x.comm));
  }
}

void run_scatter(const Ctx& x, const CollectiveCall& call) {
  // recv is valid on every rank; send only at the root.
  const std::int64_t c = call.recv.count;
  if (c == 0) return;
  const bool is_root = x.rank == call.root;
  const bool in_place = is_root && call.recv.data == call.send.address_of(call.root * c);
  const MPI_Datatype t = mpi_datatype(call.recv.dtype);
  if (x.fits_whole(c)) {
    const int ci = to_mpi_int(c);
    MDDP_MPI_CHECK(MPI_Scatter(is_root ? call.send.data : nullptr, ci, t, in_place ? MPI_IN_PLACE : call.recv.data, ci,
                               t, call.root, x.comm));
    return;
  }
  for (std::int64_t o = 0; o < c; o += x.piece()) {
    const int m = to_mpi_int(std::min(x.piece(), c - o));
    const BlockPieceType piece(t, m, c * elem_bytes(call.recv));
    MDDP_MPI_CHECK(MPI_Scatter(is_root ? call.send.address_of(o) : nullptr, 1, piece.get(),
                               in_place ? MPI_IN_PLACE : call.recv.address_of(o), m, t, call.root, x.comm));
  }
}

void run_gather(const Ctx& x, const CollectiveCall& call) {
  // send is valid on every rank; recv only at the root.
  const std::int64_t c = call.send.count;
  if (c == 0) return;
  const bool is_root = x.rank == call.root;
  const bool in_place = is_root && call.send.data == call.recv.address_of(call.root * c);
  const MPI_Datatype t = mpi_datatype(call.send.dtype);
  if (x.fits_whole(c)) {
    const int ci = to_mpi_int(c);
    MDDP_MPI_CHECK(MPI_Gather(in_place ? MPI_IN_PLACE : call.send.data, ci, t, is_root ? call.recv.data : nullptr, ci,
                              t, call.root, x.comm));
    return;
  }
  for (std::int64_t o = 0; o < c; o += x.piece()) {
    const int m = to_mpi_int(std::min(x.piece(), c - o));
    const BlockPieceType piece(t, m, c * elem_bytes(call.send));
    MDDP_MPI_CHECK(MPI_Gather(in_place ? MPI_IN_PLACE : call.send.address_of(o), m, t,
                              is_root ? call.recv.address_of(o) : nullptr, 1, piece.get(), call.root, x.comm));
  }
}

void run_all_gather(const Ctx& x, const CollectiveCall& call) {
  const std::int64_t c = call.send.count;
  if (c == 0) return;
  const bool in_place = call.send.data == call.recv.address_of(x.rank * c);
  const MPI_Datatype t = mpi_datatype(call.send.dtype);
  if (x.fits_whole(c)) {
    const int ci = to_mpi_int(c);
    MDDP_MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : call.send.data, ci, t, call.recv.data, ci, t, x.comm));
    return;
  }
  for (std::int64_t o = 0; o < c; o += x.piece()) {
    const int m = to_mpi_int(std::min(x.piece(), c - o));
    const BlockPieceType piece(t, m, c * elem_bytes(call.send));
    MDDP_MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : call.send.address_of(o), m, t, call.recv.address_of(o), 1,
                                 piece.get(), x.comm));
  }
}

void run_reduce_scatter(const Ctx& x, const CollectiveCall& call) {
  const std::int64_t c = call.recv.count;
  if (c == 0) return;
  // In place, the n*c inputs live at recv.data (== send.data) and the result lands in the first c.
  const bool in_place = call.send.data == call.recv.data;
  const MPI_Datatype t = mpi_datatype(call.recv.dtype);
  const MPI_Op op = mpi_op(call.op, call.recv.dtype);
  if (x.fits_whole(c)) {
    MDDP_MPI_CHECK(MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : call.send.data, call.recv.data, to_mpi_int(c), t,
                                            op, x.comm));
    return;
  }
  // Destinations in increasing order make the in-place case safe: rank r overwrites its first c
  // elements (its block 0) only at step d = r, after step 0 consumed that block, and blocks d > r
  // (read later) never overlap [0, c). At d = r >= 1 input [r*c, r*c + c) and output [0, c) are
  // disjoint, so only d = 0 needs MPI_IN_PLACE.
  for (int d = 0; d < x.size; ++d) {
    for (std::int64_t o = 0; o < c; o += x.limit) {
      const int m = to_mpi_int(std::min(x.limit, c - o));
      const void* src = call.send.address_of(d * c + o);
      if (x.rank != d) {
        MDDP_MPI_CHECK(MPI_Reduce(src, nullptr, m, t, op, d, x.comm));
      } else {
        MDDP_MPI_CHECK(
            MPI_Reduce(in_place && d == 0 ? MPI_IN_PLACE : src, call.recv.address_of(o), m, t, op, d, x.comm));
      }
    }
  }
}

}  // namespace

// The limit is checked before the communicator is duplicated: a bad value throws on every rank
// before any collective call, so no rank is left waiting in MPI_Comm_dup.
MpiBackend::MpiBackend(MPI_Comm parent, std::int64_t max_chunk_count)
    : DeviceStagedBackend(mpi_comm_rank(parent), mpi_comm_size(parent), StagingPolicy::PassThroughIfCudaAwareMpi),
      max_chunk_count_(max_chunk_count) {
  MDDP_CHECK(max_chunk_count >= 1 && max_chunk_count <= INT_MAX,
             "mpi: max chunk count " << max_chunk_count << " outside [1, " << INT_MAX << "]");
  MDDP_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  MDDP_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
}

MpiBackend::~MpiBackend() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);  // a destructor must not throw
}

void MpiBackend::execute_host(const CollectiveCall& call) {
  const Ctx x{comm_, rank(), size(), max_chunk_count_};
  switch (call.kind) {
    case CollectiveKind::Barrier:
      MDDP_MPI_CHECK(MPI_Barrier(comm_));
      return;
    case CollectiveKind::AllReduce:
      run_all_reduce(x, call);
      return;
    case CollectiveKind::Broadcast:
      run_broadcast(x, call);
      return;
    case CollectiveKind::Scatter:
      run_scatter(x, call);
      return;
    case CollectiveKind::Gather:
      run_gather(x, call);
      return;
    case CollectiveKind::AllGather:
      run_all_gather(x, call);
      return;
    case CollectiveKind::ReduceScatter:
      run_reduce_scatter(x, call);
      return;
  }
  MDDP_CHECK(false, "mpi backend: unknown collective kind " << static_cast<int>(call.kind));
}

}  // namespace microddp::comm
