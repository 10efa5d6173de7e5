// validation_run.cpp — parameters from the trainer's host view, then ddp::evaluate.
#include "run/validation_run.hpp"

#include <algorithm>

namespace microddp::run {

ValidationRun::ValidationRun(const model::MlpConfig& config, kernels::Ops& ops, const data::DataSource& source)
    : source_(source),
      net_(config, std::min(kBlockRows, source.rows()), ops),
      evaluator_(net_, ops, std::min(kBlockRows, source.rows())) {}

ddp::EvalCounts ValidationRun::run(comm::Communicator& comm, ddp::Trainer& trainer) {
  trainer.state_to_host();  // collective when sharded (all-gathers the shards)
  net_.param_buffer().from_host(trainer.host_state().params, 0, net_.flat_count());
  return ddp::evaluate(comm, evaluator_, source_, source_.rows());
}

}  // namespace microddp::run
