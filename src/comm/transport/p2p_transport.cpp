// p2p_transport.cpp — non-blocking point-to-point transfers over a private communicator.
#include "comm/transport/p2p_transport.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"

namespace microddp::comm {

namespace {

// MPI guarantees tags up to at least 32767 (MPI_TAG_UB >= 32767); collectives cycle through them.
constexpr std::uint64_t kTagCycle = 32768;

}  // namespace

P2pTransport::P2pTransport(MPI_Comm parent, std::int64_t max_message_bytes) : max_message_bytes_(max_message_bytes) {
  // Before the duplication: a bad limit throws on every rank before any collective call.
  MDDP_CHECK(max_message_bytes >= 1 && max_message_bytes <= INT_MAX,
             "p2p: largest message " << max_message_bytes << " bytes outside [1, " << INT_MAX << "]");
  MDDP_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  MDDP_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MDDP_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MDDP_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

P2pTransport::~P2pTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);  // a destructor must not throw
}

void P2pTransport::begin(std::uint64_t seq) { tag_ = static_cast<int>(seq % kTagCycle); }

MPI_Request P2pTransport::isend_one(const void* buf, std::int64_t bytes, int peer) {
  MPI_Request r = MPI_REQUEST_NULL;
  if (bytes == 0) return r;
  MDDP_CHECK(bytes <= max_message_bytes_,
             "p2p: message of " << bytes << " bytes above the limit " << max_message_bytes_);
  MDDP_MPI_CHECK(MPI_Isend(buf, to_mpi_int(bytes), MPI_BYTE, peer, tag_, comm_, &r));
  return r;
}

MPI_Request P2pTransport::irecv_one(void* buf, std::int64_t bytes, int peer) {
  MPI_Request r = MPI_REQUEST_NULL;
  if (bytes == 0) return r;
  MDDP_CHECK(bytes <= max_message_bytes_,
             "p2p: message of " << bytes << " bytes above the limit " << max_message_bytes_);
  MDDP_MPI_CHECK(MPI_Irecv(buf, to_mpi_int(bytes), MPI_BYTE, peer, tag_, comm_, &r));
  return r;
}

void P2pTransport::isend(const void* buf, std::int64_t bytes, int peer, std::vector<MPI_Request>& reqs) {
  const char* p = static_cast<const char*>(buf);
  std::int64_t off = 0;
  do {
    const std::int64_t m = std::min(max_message_bytes_, bytes - off);
    MPI_Request r = MPI_REQUEST_NULL;
    MDDP_MPI_CHECK(MPI_Isend(m == 0 ? nullptr : p + off, to_mpi_int(m), MPI_BYTE, peer, tag_, comm_, &r));
    reqs.push_back(r);
    off += m;
  } while (off < bytes);
}

void P2pTransport::irecv(void* buf, std::int64_t bytes, int peer, std::vector<MPI_Request>& reqs) {
  char* p = static_cast<char*>(buf);
  std::int64_t off = 0;
  do {
    const std::int64_t m = std::min(max_message_bytes_, bytes - off);
    MPI_Request r = MPI_REQUEST_NULL;
    MDDP_MPI_CHECK(MPI_Irecv(m == 0 ? nullptr : p + off, to_mpi_int(m), MPI_BYTE, peer, tag_, comm_, &r));
    reqs.push_back(r);
    off += m;
  } while (off < bytes);
}

void P2pTransport::wait(MPI_Request& req) { MDDP_MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE)); }

void P2pTransport::wait_all(std::vector<MPI_Request>& reqs) {
  if (!reqs.empty()) {
    MDDP_MPI_CHECK(MPI_Waitall(to_mpi_int(static_cast<std::int64_t>(reqs.size())), reqs.data(), MPI_STATUSES_IGNORE));
  }
  reqs.clear();
}

void P2pTransport::sendrecv(const void* sbuf, std::int64_t sbytes, int dst, void* rbuf, std::int64_t rbytes, int src) {
  irecv(rbuf, rbytes, src, internal_);
  isend(sbuf, sbytes, dst, internal_);
  wait_all(internal_);
}

void P2pTransport::send(const void* buf, std::int64_t bytes, int peer) {
  isend(buf, bytes, peer, internal_);
  wait_all(internal_);
}

void P2pTransport::recv(void* buf, std::int64_t bytes, int peer) {
  irecv(buf, bytes, peer, internal_);
  wait_all(internal_);
}

char* P2pTransport::scratch(std::int64_t bytes) {
  if (bytes > static_cast<std::int64_t>(scratch_.size())) {
    scratch_.clear();
    scratch_.shrink_to_fit();  // free first: never hold old and new at once
    scratch_.resize(static_cast<std::size_t>(bytes));
  }
  return scratch_.data();
}

std::vector<MPI_Request>& P2pTransport::pool(int i, std::int64_t n) {
  MDDP_CHECK(i >= 0 && i < kPools, "p2p: request pool " << i << " does not exist");
  auto& p = pools_[i];
  if (static_cast<std::int64_t>(p.size()) < n) p.resize(static_cast<std::size_t>(n));
  std::fill(p.begin(), p.end(), MPI_REQUEST_NULL);
  return p;
}

std::vector<MPI_Request>& P2pTransport::list(int i) {
  MDDP_CHECK(i >= 0 && i < kLists, "p2p: request list " << i << " does not exist");
  return lists_[i];
}

}  // namespace microddp::comm
