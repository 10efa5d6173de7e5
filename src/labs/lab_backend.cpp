// lab_backend.cpp — see lab_backend.hpp.
#include "labs/lab_backend.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "comm/backends/hand_rolled_backend.hpp"
#include "comm/factory.hpp"
#include "comm/transport/mpi_comm_size.hpp"
#include "core/error.hpp"
#include "labs/lab_api.hpp"

namespace microddp::labs {

namespace {

class LabBackend final : public comm::HostBackend {
 public:
  LabBackend(MPI_Comm parent, const comm::BackendDescription& description, const comm::CommConfig& config)
      : comm::HostBackend(comm::mpi_comm_rank(parent), comm::mpi_comm_size(parent)),
        name_(description.name),
        ring_(description.small_algorithm == comm::AllReduceAlgorithm::Ring),
        sync_(description.name == "lab-sync"),
        lab_(parent),
        production_(parent, production_description(description), config) {}
  std::string_view name() const override { return name_; }

 protected:
  void execute(const comm::CollectiveCall& call) override {
    if (sync_) {
      if (!run_sync_lab(call)) production_.run(call);
      return;
    }
    float* data = lab_all_reduce_buffer(call);
    if (data == nullptr) {
      production_.run(call);
      return;
    }
    lab_.begin(call.seq);
    if (ring_) {
      ring_all_reduce(lab_, data, call.recv.count);
    } else {
      naive_all_reduce(lab_, data, call.recv.count);
    }
  }

 private:
  // Lab 07 (`--comm lab-sync`): broadcasts, gathers and barriers on host memory run the student's
  // functions; false: not one of them, the production backend runs it. Broadcast and gather only move
  // data, so any dtype whose blocks are whole 4-byte words travels as floats (an int64 as two): the
  // student's code must copy, never compute. Before the student's function runs, the buffers it
  // must fill are poisoned (kPoison), as the grader does: initialisation is rank-independent, so a
  // broadcast that leaves non-roots alone would otherwise pass unnoticed in train; poisoned, the
  // trainer's agreement check after the initial broadcast names it.
  bool run_sync_lab(const comm::CollectiveCall& call) {
    const bool host = call.send.device == core::Device::Host && call.recv.device == core::Device::Host;
    if (!host) return false;
    constexpr std::int64_t kWord = sizeof(float);
    switch (call.kind) {
      case comm::CollectiveKind::Barrier:
        lab_.begin(call.seq);
        dissemination_barrier(lab_);
        return true;
      case comm::CollectiveKind::Broadcast: {
        const std::int64_t bytes = call.recv.bytes();
        if (bytes % kWord != 0) return false;
        auto* data = static_cast<float*>(call.recv.data);
        if (rank() != call.root) std::fill(data, data + bytes / kWord, kPoison);
        lab_.begin(call.seq);
        binomial_broadcast(lab_, data, bytes / kWord, call.root);
        return true;
      }
      case comm::CollectiveKind::Gather: {
        const std::int64_t block_bytes = call.send.bytes();
        if (block_bytes % kWord != 0) return false;
        const std::int64_t words = block_bytes / kWord;
        float* recv = nullptr;
        if (rank() == call.root) {
          recv = static_cast<float*>(call.recv.data);
          for (int i = 0; i < size(); ++i) {  // the root's own block may be the send buffer (in place)
            if (i != call.root && words > 0) std::fill(recv + i * words, recv + (i + 1) * words, kPoison);
          }
        }
        lab_.begin(call.seq);
        linear_gather(lab_, static_cast<const float*>(call.send.data), words, recv, call.root);
        return true;
      }
      default:
        return false;
    }
  }
  // A quiet NaN with a payload no computation produces ("dead"), so a poisoned word is recognisable.
  static inline const float kPoison = std::bit_cast<float>(0x7fc0deadU);

  // The production backend with the same all-reduce: runs everything the lab does not.
  static comm::BackendDescription production_description(comm::BackendDescription d) {
    d.name = d.small_algorithm == comm::AllReduceAlgorithm::Ring ? "ring" : "naive";
    return d;
  }

  std::string name_;
  bool ring_;
  bool sync_;  // lab-sync: lab 07's primitives, the production ring for everything else
  LabComm lab_;
  comm::HandRolledBackend production_;
};

// Every lab row's maker: its description says which lab runs (name) and which production
// all-reduce stands beside it (small_algorithm).
std::unique_ptr<comm::Communicator> make_lab(const comm::MpiRuntime& runtime, const comm::BackendDescription& d,
                                             const comm::CommConfig& config, const core::FaultPlan& faults) {
  return std::make_unique<comm::Communicator>(std::make_unique<LabBackend>(runtime.world(), d, config), faults);
}

}  // namespace

float* lab_all_reduce_buffer(const comm::CollectiveCall& call) {
  const bool lab_call = call.kind == comm::CollectiveKind::AllReduce && call.op == comm::ReduceOp::Sum &&
                        call.recv.dtype == core::DType::F32 && call.recv.device == core::Device::Host &&
                        call.send.device == core::Device::Host;
  if (!lab_call) return nullptr;
  auto* data = static_cast<float*>(call.recv.data);
  if (call.send.data != call.recv.data && call.recv.count > 0)
    std::memcpy(data, call.send.data, static_cast<std::size_t>(call.recv.count) * sizeof(float));
  return data;
}

void register_lab_backends() {
  static const bool registered = [] {
    using A = comm::AllReduceAlgorithm;
    // The course's labs (docs/labs): a student's fp32 all-reduce inside the real program.
    comm::register_backend({"lab-naive", comm::BackendKind::Host, false, A::Naive, A::Naive, false, &make_lab});
    comm::register_backend({"lab-ring", comm::BackendKind::Host, false, A::Ring, A::Ring, false, &make_lab});
    // Lab 07: the student's broadcast, gather and barrier; all-reduces run the production ring.
    comm::register_backend({"lab-sync", comm::BackendKind::Host, false, A::Ring, A::Ring, false, &make_lab});
    return true;
  }();
  (void)registered;
}

}  // namespace microddp::labs
