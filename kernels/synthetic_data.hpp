// synthetic_data.hpp — the rows of the synthetic classification set (data::SyntheticDataset),
// defined once and made either by the CPU (synthetic_rows_host, here) or by a CUDA kernel
// (gpu::synthetic_rows, cuda_kernels.hpp), with the same bits; Ops::synthetic_rows picks the one of
// its device.
// Contract, for sample i (a global sample number) and spec s:
//   x[i, j] = portable_normal01(s.seed, s.stream, i * s.in_dim + j)      (portable_math.hpp)
//   y[i]    = the first c with the largest score_c, where
//             score_c = (((0 + W[c,0] x[i,0]) + W[c,1] x[i,1]) + ...) + W[c,in_dim-1] x[i,in_dim-1]
//             in float, every product and every sum rounded once (teacher_score), W = s.teacher.
// Each sample's sums are in this one order on both sides; the implementations are free to work on
// many samples (or elements) at once.
#pragma once

#include <cstdint>

#include "core/error.hpp"
#include "core/host_device.hpp"
#include "kernels/portable_math.hpp"

namespace microddp::kernels {

struct SyntheticSpec {
  std::uint64_t seed = 0;
  std::uint64_t stream = 0;  // the Philox stream of the features
  std::int64_t in_dim = 0;
  std::int64_t classes = 0;
  // W: (classes, in_dim), row-major, in the memory of the device that makes the rows.
  const float* teacher = nullptr;
};

// score_c of one row x(in_dim) against one teacher row w(in_dim).
MDDP_HD_INLINE float teacher_score(const float* w, const float* x, std::int64_t in_dim) {
  float score = 0.0f;
  for (std::int64_t j = 0; j < in_dim; ++j) score = add_rn(score, mul_rn(w[j], x[j]));
  return score;
}

// The label of one row: the first class with the largest score.
MDDP_HD_INLINE std::int32_t teacher_label(const float* teacher, const float* x, std::int64_t in_dim,
                                          std::int64_t classes) {
  std::int32_t best = 0;
  float best_score = teacher_score(teacher, x, in_dim);
  for (std::int64_t c = 1; c < classes; ++c) {
    const float score = teacher_score(teacher + c * in_dim, x, in_dim);
    if (score > best_score) {
      best_score = score;
      best = static_cast<std::int32_t>(c);
    }
  }
  return best;
}

// The argument checks of both implementations: a spec that makes sense and sample counters
// (first + count) * in_dim that fit in int64 (so in Philox's 64-bit counter).
inline void check_synthetic_rows(const SyntheticSpec& s, std::int64_t first, std::int64_t count, const char* who) {
  MDDP_CHECK(
      s.in_dim > 0 && s.classes >= 2 && s.classes <= INT32_MAX,
      who << ": needs in_dim > 0 and classes in [2, 2^31), got in_dim " << s.in_dim << ", classes " << s.classes);
  MDDP_CHECK(first >= 0 && count >= 0 && first <= INT64_MAX - count && first + count <= INT64_MAX / s.in_dim,
             who << ": bad sample range [" << first << ", " << first << " + " << count << ") for in_dim " << s.in_dim);
  MDDP_CHECK(count == 0 || s.teacher != nullptr, who << ": no teacher");
}

// out[i] = portable_normal01(seed, stream, first_counter + i) for i < n (first_counter + n must not
// wrap). Vectorised (SSE2 at least): several times the speed of a loop over core::normal01.
void portable_normal_fill(std::uint64_t seed, std::uint64_t stream, std::uint64_t first_counter, std::int64_t n,
                          float* out);

// x(count, in_dim) and y(count) of samples [first, first + count), host memory (teacher too).
void synthetic_rows_host(const SyntheticSpec& spec, std::int64_t first, std::int64_t count, float* x, std::int32_t* y);

}  // namespace microddp::kernels
