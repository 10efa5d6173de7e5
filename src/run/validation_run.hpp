// validation_run.hpp — `train`'s evaluation of the validation set (--val-fraction, --val-data) with
// the trainer's current parameters: ddp::Evaluator's integer counts, all-reduced, so the loss and
// accuracy are identical at every world size (docs/data_sets.md, "Evaluation").
//
// Contract: run() is collective and changes nothing of the training run (it reads the parameters
// through the trainer's host view into a model of its own). The evaluation model's blocks hold
// kBlockRows rows whatever the world size, so each row's logits come from the same computation at
// np 1, 2, 3 (the training model's buffers hold one rank's share, which depends on the world
// size). Its activations are allocated once here.
#pragma once

#include <cstdint>

#include "comm/communicator.hpp"
#include "data/data_source.hpp"
#include "ddp/evaluator.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "model/mlp.hpp"

namespace microddp::run {

class ValidationRun {
 public:
  // `evaluate`'s default block (--batch 1024): large enough for efficient GEMMs, small enough
  // that its activations stay a fraction of the training model's.
  static constexpr std::int64_t kBlockRows = 1024;

  ValidationRun(const model::MlpConfig& config, kernels::Ops& ops, const data::DataSource& source);
  ddp::EvalCounts run(comm::Communicator& comm, ddp::Trainer& trainer);
  std::int64_t rows() const { return source_.rows(); }

 private:
  const data::DataSource& source_;
  model::FullMLP net_;
  ddp::Evaluator evaluator_;
};

}  // namespace microddp::run
