// numerics.cpp — gradient sum of squares, clip factor, NaN policy names.
#include "ddp/numerics.hpp"

#include "core/error.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::ddp {

double grad_sum_squares(const float* g, std::int64_t n) {
  // One implementation for the trainer (via CpuOps::sum_squares) and this host helper.
  return kernels::host_sum_squares(g, n);
}

double clip_factor(double norm, double max_norm) { return kernels::clip_factor(norm, max_norm); }

}  // namespace microddp::ddp
