// lab_backend.cpp — see lab_backend.hpp.
#include "labs/lab_backend.hpp"

#include <cstring>
#include <string>

#include "comm/hand_rolled_backend.hpp"
#include "comm/mpi_comm_size.hpp"
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
        lab_(parent),
        production_(parent, production_description(description), config) {}
  std::string_view name() const override { return name_; }

 protected:
  void execute(const comm::CollectiveCall& call) override {
    const bool lab_call = call.kind == comm::CollectiveKind::AllReduce && call.op == comm::ReduceOp::Sum &&
                          call.recv.dtype == core::DType::F32 && call.recv.device == core::Device::Host &&
                          call.send.device == core::Device::Host;
    if (!lab_call) {
      production_.run(call);
      return;
    }
    auto* data = static_cast<float*>(call.recv.data);
    if (call.send.data != call.recv.data && call.recv.count > 0)  // the lab functions work in place
      std::memcpy(data, call.send.data, static_cast<std::size_t>(call.recv.count) * sizeof(float));
    lab_.begin(call.seq);
    if (ring_) {
      ring_all_reduce(lab_, data, call.recv.count);
    } else {
      naive_all_reduce(lab_, data, call.recv.count);
    }
  }

 private:
  // The production backend with the same all-reduce: runs everything the lab does not.
  static comm::BackendDescription production_description(comm::BackendDescription d) {
    d.name = d.small_algorithm == comm::AllReduceAlgorithm::Ring ? "ring" : "naive";
    return d;
  }

  std::string name_;
  bool ring_;
  LabComm lab_;
  comm::HandRolledBackend production_;
};

}  // namespace

std::unique_ptr<comm::HostBackend> make_lab_backend(MPI_Comm parent, const comm::BackendDescription& description,
                                                    const comm::CommConfig& config) {
  MDDP_CHECK(description.small_algorithm == comm::AllReduceAlgorithm::Ring ||
                 description.small_algorithm == comm::AllReduceAlgorithm::Naive,
             "lab backend '" << description.name << "' must be described as naive or ring");
  return std::make_unique<LabBackend>(parent, description, config);
}

}  // namespace microddp::labs
