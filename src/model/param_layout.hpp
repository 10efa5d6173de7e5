// param_layout.hpp — where every parameter of FullMLP lives in the flat buffers: the one definition
// used by the model, checkpoints (io), the performance model (perf) and the bucket planner (ddp).
//
// Order (docs/design.md): gradient-ready order, b_L, W_L, b_{L-1}, W_{L-1}, ..., b_0, W_0 — backward
// finishes the last layer first and, inside a layer, the bias gradient before the weight gradient,
// so consecutive ready gradients are one contiguous slice (buckets need no packing).
//
// Alignment: every parameter starts at a multiple of kParamAlignBytes (256 B = 64 floats), with
// zeros between parameters. 256 B is cudaMalloc's alignment, so every parameter, gradient and
// optimizer-state slice is as aligned as a fresh allocation: vectorised (128-bit) kernel loads,
// cuBLAS's and NCCL's aligned fast paths, whole 32-byte sectors. The padding is never written by
// backward and starts at zero, so it stays zero through all-reduces (0 + 0) and every optimizer
// (Adam and SGD map p = g = m = v = 0 to 0); it costs under 64 floats per parameter (8 KiB on the
// default 1 MiB model). Checkpoints store each parameter as its own dataset, so the padding never
// reaches a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace microddp::model {

struct MlpConfig {
  std::int64_t in_dim = 128;
  std::int64_t width = 128;
  std::int64_t depth = 16;  // number of Linear+ReLU layers before the output layer
  std::int64_t classes = 2;
};

struct ParamInfo {
  std::string name;  // "layer_03.weight"
  int index = 0;     // position in gradient-ready order (0 = first ready)
  int layer = 0;     // 0 .. depth
  bool is_bias = false;
  std::int64_t offset = 0;  // elements from the start of the flat buffers (a multiple of kParamAlignFloats)
  std::int64_t count = 0;   // elements
  std::int64_t rows = 0;    // weight: out features; bias: count
  std::int64_t cols = 0;    // weight: in features;  bias: 1
  bool operator==(const ParamInfo&) const = default;
};

// Parameters, gradients and optimizer state are float32: the bytes of one element of the flat
// buffers, and so what a gradient collective moves per element.
inline constexpr std::int64_t kParamElementBytes = static_cast<std::int64_t>(sizeof(float));
inline constexpr std::int64_t kParamAlignBytes = 256;
inline constexpr std::int64_t kParamAlignFloats = kParamAlignBytes / kParamElementBytes;

// `count` rounded up to a multiple of kParamAlignFloats.
constexpr std::int64_t align_param_count(std::int64_t count) {
  return (count + kParamAlignFloats - 1) / kParamAlignFloats * kParamAlignFloats;
}

// The layout of the model with this configuration, in gradient-ready order (throws core::Error on
// a bad shape).
std::vector<ParamInfo> param_layout(const MlpConfig& config);
// Elements of the flat buffers: the last parameter's end, rounded up to the alignment.
std::int64_t flat_count(const std::vector<ParamInfo>& layout);
// Parameters of the model (the padding not counted).
std::int64_t parameter_count(const std::vector<ParamInfo>& layout);

}  // namespace microddp::model
