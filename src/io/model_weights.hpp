// model_weights.hpp — a trained model's weights from a checkpoint or an exported model, to start a
// new run from (`train --init-from FILE`, docs/training_recipes.md).
//
// read_model_weights() takes either file kind (told apart by the root attribute `format`):
//   a checkpoint ("microddp-checkpoint", io/checkpoint_load.hpp): fully verified, every checksum;
//   an export ("microddp-model", io/model_export.hpp): every layer group with its float32 weight
//     (out, in) and bias (out,), shapes checked against its in_dim, width, depth, classes.
// check_weights_fit() then compares the model it holds with this run's, tensor by tensor, and names
// the first that differs with both shapes. Errors are core::UsageError naming the file (exit 2).
//
// load_weights() is the collective that puts them into a trainer: rank 0 reads and checks, every
// rank receives the parameters; the optimizer state is this run's fresh one and the step count 0,
// so only the weights come from the file (PyTorch: model.load_state_dict, a new optimizer).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ddp/train_state.hpp"
#include "model/param_layout.hpp"

namespace microddp::io {

struct ModelWeights {
  std::string path;
  std::string kind;            // "checkpoint" | "export"
  model::MlpConfig config;     // the model's shape
  std::vector<float> params;   // flat, in model::param_layout(config) order
  std::int64_t steps_done = 0; // the training steps behind them (as recorded)
};

ModelWeights read_model_weights(const std::string& path);
void check_weights_fit(const ModelWeights& w, const model::MlpConfig& run);

// Collective; returns (on every rank) "weights from FILE (checkpoint, after 4200 steps)". A file
// that cannot be read or does not fit is one agreed core::UsageError on every rank.
std::string load_weights(MPI_Comm comm, const std::string& path, ddp::TrainState& trainer);

}  // namespace microddp::io
