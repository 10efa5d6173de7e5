// model_export.hpp — the trained model as a plain HDF5 file any HDF5 reader can run (`microddp
// export CKPT OUT.h5`; docs/checkpoint_format.md, "Exported model", has the numpy inference).
//
// File layout (format "microddp-model", version 1), no optimizer state, no padding, no checksums:
//   /                 attributes: format, format_version, in_dim, width, depth, classes,
//                     layers (= depth + 1), hidden_activation = "relu", output = "logits",
//                     forward (the computation in one line), source (the checkpoint), steps_done
//   /layer_NN         one group per layer, NN = 00 .. depth, applied in that order; attributes
//                     in_features, out_features, activation ("relu" for every layer but the last,
//                     "none" for the last, whose outputs are the logits)
//   /layer_NN/weight  float32 (out_features, in_features), row-major (PyTorch's nn.Linear.weight):
//                     y = x W^T + b
//   /layer_NN/bias    float32 (out_features,)
// The input is what the model was trained on: rows of the training file's /inputs (for a
// `make-dataset --from-idx` file, pixels / 255); the logits' arg-max is the predicted class.
// Written like every file we publish for the user: OUT.tmp, then fsync and rename, never onto an
// input or a checkpoint (io/output_file.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/output_file.hpp"
#include "model/param_layout.hpp"

namespace microddp::io {

inline constexpr const char* kModelFormat = "microddp-model";
inline constexpr std::int64_t kModelFormatVersion = 1;

struct ModelExportInfo {
  std::string source;  // the checkpoint it came from
  std::int64_t steps_done = 0;
};

// `flat`: the parameters in the flat, gradient-ready layout of model::param_layout(config) (what a
// checkpoint's read gives). An output that `rules` refuse or that cannot be created is a
// core::UsageError; other I/O failures core::Error. A failure leaves no OUT.tmp.
void write_model_export(const std::string& path, const model::MlpConfig& config, const std::vector<float>& flat,
                        const ModelExportInfo& info, const OutputRules& rules);

}  // namespace microddp::io
