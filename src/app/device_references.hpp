// device_references.hpp — what `analyze`'s verdict compares a GPU run with: this GPU's GEMM rate at
// the run's precision and its memory bandwidth, measured on the device through the Ops the model
// computes with (so tf32 / bf16 are the run's GEMM paths, not a datasheet's).
// Contract:
//   * GEMM peak: one square n x n x n GEMM (C = A B; gemm_bf16 on bf16 operands for bf16, gemm for
//     fp32 and tf32, whose Ops was made with TF32 on), 2 warm-ups then the median of 5, each call
//     followed by synchronize(); 2 n^3 FLOPs per call. At n = 8192 (analyze's default) a GEMM takes
//     milliseconds on a current GPU, so launch and synchronisation costs are far below 1%.
//   * Memory: a device-to-device copy of `copy_bytes` / 2 bytes (read + write = copy_bytes of traffic),
//     timed the same way; the rate is copy_bytes / time, the unit `analyze` gives the optimizer's
//     streaming rate in.
//   * Each source string says what was measured, where ("measured on cuda:0 (...): one 8192^3 bf16
//     GEMM, median of 5"), for the report's references line.
//   * Collective only in the sense that every rank calls it at the same point (no communication).
#pragma once

#include <cstdint>
#include <string>

#include "core/precision.hpp"
#include "kernels/ops.hpp"

namespace microddp::app {

struct DeviceReferences {
  double gemm_gflops = 0;
  std::string gemm_source;
  double mem_gbytes_s = 0;
  std::string mem_source;
};

DeviceReferences measure_device_references(kernels::Ops& ops, core::Precision precision, std::int64_t gemm_n,
                                           std::int64_t copy_bytes);

}  // namespace microddp::app
