// lab_comm.cpp — see lab_comm.hpp.
#include "labs/lab_comm.hpp"

#include "core/error.hpp"

namespace microddp::labs {

namespace {
constexpr std::int64_t kLargestMessageBytes = std::int64_t{1} << 30;  // the production backends' default
constexpr std::int64_t kFloat = sizeof(float);
}  // namespace

LabComm::LabComm(MPI_Comm parent)
    : transport_(parent, kLargestMessageBytes), floats_sent_to_(static_cast<std::size_t>(transport_.size()), 0) {
  transport_.begin(0);
}

void LabComm::check_peer(int peer, const char* what) const {
  MDDP_USAGE_CHECK(peer >= 0 && peer < size() && peer != rank(),
                   "lab: rank " << rank() << " called " << what << " with peer " << peer << " (ranks are 0.."
                                << size() - 1 << ", and a rank does not message itself)");
}

void LabComm::send(const float* data, std::int64_t count, int to) {
  check_peer(to, "send");
  MDDP_USAGE_CHECK(count >= 0, "lab: send of a negative count " << count);
  transport_.send(data, count * kFloat, to);
  floats_sent_ += count;
  floats_sent_to_[static_cast<std::size_t>(to)] += count;
  ++messages_sent_;
}

void LabComm::recv(float* data, std::int64_t count, int from) {
  check_peer(from, "recv");
  MDDP_USAGE_CHECK(count >= 0, "lab: recv of a negative count " << count);
  transport_.recv(data, count * kFloat, from);
}

void LabComm::sendrecv(const float* send_data, std::int64_t send_count, int to, float* recv_data,
                       std::int64_t recv_count, int from) {
  check_peer(to, "sendrecv (to)");
  check_peer(from, "sendrecv (from)");
  MDDP_USAGE_CHECK(send_count >= 0 && recv_count >= 0,
                   "lab: sendrecv of a negative count " << send_count << " / " << recv_count);
  transport_.sendrecv(send_data, send_count * kFloat, to, recv_data, recv_count * kFloat, from);
  floats_sent_ += send_count;
  floats_sent_to_[static_cast<std::size_t>(to)] += send_count;
  ++messages_sent_;
}

}  // namespace microddp::labs
