// lab_hier.cpp — see lab_hier.hpp.
#include "labs/lab_hier.hpp"

#include <string>

#include "comm/backends/hier_backend.hpp"
#include "comm/factory.hpp"
#include "comm/transport/mpi_comm_size.hpp"
#include "labs/lab_backend.hpp"

namespace microddp::labs {

LabNodes lab_nodes(const comm::HierTopology& topology) { return LabNodes{topology.ranks_by_node()}; }

namespace {

class LabHierBackend final : public comm::HostBackend {
 public:
  LabHierBackend(MPI_Comm parent, const comm::CommConfig& config)
      : comm::HostBackend(comm::mpi_comm_rank(parent), comm::mpi_comm_size(parent)),
        lab_(parent),
        production_(parent, config),
        nodes_(lab_nodes(production_.topology())) {}
  std::string_view name() const override { return "lab-hier"; }

 protected:
  void execute(const comm::CollectiveCall& call) override {
    float* data = lab_all_reduce_buffer(call);
    if (data == nullptr) {
      production_.run(call);
      return;
    }
    lab_.begin(call.seq);
    hierarchical_all_reduce(lab_, nodes_, data, call.recv.count);
  }

 private:
  LabComm lab_;
  comm::HierBackend production_;  // the nodes, and everything the lab does not run
  LabNodes nodes_;
};

std::unique_ptr<comm::Communicator> make_lab_hier(const comm::MpiRuntime& runtime, const comm::BackendDescription&,
                                                  const comm::CommConfig& config, const core::FaultPlan& faults) {
  return std::make_unique<comm::Communicator>(std::make_unique<LabHierBackend>(runtime.world(), config), faults);
}

}  // namespace

void register_lab_hier_backend() {
  static const bool registered = [] {
    using A = comm::AllReduceAlgorithm;
    // Lab 11: the student's hierarchical fp32 all-reduce; everything else production `hier`.
    comm::register_backend(
        {"lab-hier", comm::BackendKind::Host, false, A::Hierarchical, A::Hierarchical, false, &make_lab_hier});
    return true;
  }();
  (void)registered;
}

}  // namespace microddp::labs
