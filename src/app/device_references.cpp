// device_references.cpp — a GPU's GEMM peak and copy bandwidth, measured (see device_references.hpp).
#include "app/device_references.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "kernels/ops_buffer.hpp"
#include "perf/median.hpp"

namespace microddp::app {

namespace {
constexpr int kWarmup = 2, kReps = 5;  // 2: cuBLAS picks its kernel and allocates on the first calls

template <class Fn>
double median_ms(kernels::Ops& ops, Fn&& fn) {
  std::vector<double> t;
  for (int i = 0; i < kWarmup + kReps; ++i) {
    core::Stopwatch sw;
    fn();
    ops.synchronize();
    if (i >= kWarmup) t.push_back(sw.elapsed_ms());
  }
  return perf::median(std::move(t));
}
}  // namespace

DeviceReferences measure_device_references(kernels::Ops& ops, core::Precision precision, std::int64_t gemm_n,
                                           std::int64_t copy_bytes) {
  MDDP_CHECK(gemm_n >= 1 && copy_bytes >= 8, "device references: GEMM side " << gemm_n << ", copy " << copy_bytes
                                                                             << " bytes");
  const std::int64_t nn = gemm_n * gemm_n;
  const bool bf16 = precision == core::Precision::Bf16;
  kernels::OpsBuffer<float> a(ops, nn), b(ops, nn), c(ops, nn);
  {
    // Values of order 1 (no denormals, no overflow); the result is never read.
    std::vector<float> h(static_cast<std::size_t>(nn));
    for (std::int64_t i = 0; i < nn; ++i) h[static_cast<std::size_t>(i)] = 0.01f * static_cast<float>(i % 97);
    a.from_host(h.data(), 0, nn);
    b.from_host(h.data(), 0, nn);
  }
  kernels::OpsBuffer<std::uint16_t> a16(ops, bf16 ? nn : 0), b16(ops, bf16 ? nn : 0);
  if (bf16) {
    ops.encode_wire16(kernels::Wire16::BF16, a.data(), a16.data(), nullptr, nn);
    ops.encode_wire16(kernels::Wire16::BF16, b.data(), b16.data(), nullptr, nn);
    ops.reserve_bf16_gemm(nn);
  }
  const double gemm_ms = median_ms(ops, [&] {
    if (bf16) {
      ops.gemm_bf16(false, false, gemm_n, gemm_n, gemm_n, 1.0f, a16.data(), b16.data(), 0.0f, c.data());
    } else {
      ops.gemm(false, false, gemm_n, gemm_n, gemm_n, 1.0f, a.data(), b.data(), 0.0f, c.data());
    }
  });
  const std::int64_t copy_count = std::max<std::int64_t>(1, copy_bytes / 8);  // floats: each read once, written once
  kernels::OpsBuffer<float> src(ops, copy_count), dst(ops, copy_count);
  ops.zero(src.data(), copy_count);
  const double copy_ms = median_ms(ops, [&] { ops.copy(dst.data(), src.data(), copy_count); });

  DeviceReferences r;
  const double n = static_cast<double>(gemm_n);
  r.gemm_gflops = 2.0 * n * n * n / (gemm_ms * 1e6);
  r.mem_gbytes_s = static_cast<double>(copy_count * 8) / (copy_ms * 1e6);
  const std::string where = "measured on " + ops.description();
  char what[160];
  std::snprintf(what, sizeof what, ": one %" PRId64 "^3 %s GEMM, median of %d", gemm_n,
                std::string(core::precision_name(precision)).c_str(), kReps);
  r.gemm_source = where + what;
  std::snprintf(what, sizeof what, ": a device-to-device copy, %.4g MiB read + written, median of %d",
                static_cast<double>(copy_count * 8) / (1 << 20), kReps);
  r.mem_source = where + what;
  return r;
}

}  // namespace microddp::app
