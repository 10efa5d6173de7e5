// host_reduce.cpp — typed reduction loops over host buffers and the host sum of squares
// (vectorisable, no allocation).
#include "kernels/host_reduce.hpp"

#include <cstdint>

#include "core/error.hpp"
#include "kernels/cpu/f16_arrays.hpp"
#include "kernels/elementwise.hpp"

namespace microddp::kernels {

namespace {

template <typename T, typename F>
void dispatch_op(core::ReduceOp op, F&& f) {
  // Separate instantiations per op so the compiler vectorises a branch-free loop.
  switch (op) {
    case core::ReduceOp::Max:
      f([](T a, T b) { return a > b ? a : b; });
      break;
    case core::ReduceOp::Min:
      f([](T a, T b) { return a < b ? a : b; });
      break;
    default:
      f([](T a, T b) { return a + b; });
      break;
  }
}

// 16-bit wire formats: decode, combine in fp32, round once (elementwise.hpp wire16_reduce_pair).
// One loop per format and op so each is branch-free.
template <Wire16 F, core::ReduceOp Op>
void reduce_wire16_typed(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n) {
  if constexpr (F == Wire16::F16 && Op == core::ReduceOp::Sum) {
    f16_sum_array(dst, a, b, n);  // F16C where the processor has it (f16_arrays.hpp); bit-identical
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = wire16_reduce_pair(F, Op, a[i], b[i]);
  }
}
template <Wire16 F>
void reduce_wire16(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n,
                   core::ReduceOp op) {
  switch (op) {
    case core::ReduceOp::Max:
      reduce_wire16_typed<F, core::ReduceOp::Max>(dst, a, b, n);
      break;
    case core::ReduceOp::Min:
      reduce_wire16_typed<F, core::ReduceOp::Min>(dst, a, b, n);
      break;
    default:
      reduce_wire16_typed<F, core::ReduceOp::Sum>(dst, a, b, n);
      break;
  }
}

template <typename T>
void reduce_typed(T* dst, const T* a, const T* b, std::int64_t n, core::ReduceOp op) {
  dispatch_op<T>(op, [&](auto combine) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = combine(a[i], b[i]);
  });
}

void check_pair(const core::TensorView& x, const core::TensorView& y) {
  MDDP_CHECK(x.dtype == y.dtype && x.count == y.count, "host reduce: mismatched buffers ("
                                                           << x.count << " " << core::dtype_name(x.dtype) << " vs "
                                                           << y.count << " " << core::dtype_name(y.dtype) << ")");
  MDDP_CHECK(x.device == core::Device::Host && y.device == core::Device::Host, "host reduce on a device buffer");
}

}  // namespace

void host_reduce(core::TensorView dst, core::TensorView a, core::TensorView b, core::ReduceOp op) {
  check_pair(dst, a);
  check_pair(dst, b);
  switch (dst.dtype) {
    case core::DType::F32:
      reduce_typed(dst.as<float>(), a.as<float>(), b.as<float>(), dst.count, op);
      break;
    case core::DType::F64:
      reduce_typed(dst.as<double>(), a.as<double>(), b.as<double>(), dst.count, op);
      break;
    case core::DType::I32:
      reduce_typed(dst.as<std::int32_t>(), a.as<std::int32_t>(), b.as<std::int32_t>(), dst.count, op);
      break;
    case core::DType::I64:
      reduce_typed(dst.as<std::int64_t>(), a.as<std::int64_t>(), b.as<std::int64_t>(), dst.count, op);
      break;
    case core::DType::F16:
      reduce_wire16<Wire16::F16>(static_cast<std::uint16_t*>(dst.data), static_cast<const std::uint16_t*>(a.data),
                                 static_cast<const std::uint16_t*>(b.data), dst.count, op);
      break;
    case core::DType::BF16:
      reduce_wire16<Wire16::BF16>(static_cast<std::uint16_t*>(dst.data), static_cast<const std::uint16_t*>(a.data),
                                  static_cast<const std::uint16_t*>(b.data), dst.count, op);
      break;
  }
}

void host_reduce_into(core::TensorView dst, core::TensorView src, core::ReduceOp op) { host_reduce(dst, dst, src, op); }

void host_scale(core::TensorView x, double alpha) {
  MDDP_CHECK(x.device == core::Device::Host, "host_scale on a device buffer");
  if (x.dtype == core::DType::F32) {
    float* p = x.as<float>();
    const float a = static_cast<float>(alpha);
    for (std::int64_t i = 0; i < x.count; ++i) p[i] *= a;
  } else if (x.dtype == core::DType::F64) {
    double* p = x.as<double>();
    for (std::int64_t i = 0; i < x.count; ++i) p[i] *= alpha;
  } else {
    MDDP_CHECK(false, "host_scale needs a floating-point dtype, got " << core::dtype_name(x.dtype));
  }
}

double host_sum_squares(const float* x, std::int64_t n) {
  MDDP_CHECK(n >= 0, "host_sum_squares: negative count " << n);
  // 8 independent accumulators: the compiler may not reorder a floating-point sum by itself, and a
  // single chain would be bound by the add latency (~4 cycles per element).
  constexpr std::int64_t kLanes = 8;
  double acc[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::int64_t l = 0; l < kLanes; ++l) {
      const double v = x[i + l];
      acc[l] += v * v;
    }
  }
  for (; i < n; ++i) {
    const double v = x[i];
    acc[0] += v * v;
  }
  double sum = 0.0;
  for (double a : acc) sum += a;
  return sum;
}

}  // namespace microddp::kernels
