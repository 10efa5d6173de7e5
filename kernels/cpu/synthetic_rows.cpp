// synthetic_rows.cpp — the CPU maker of the synthetic rows (synthetic_data.hpp): the same bits as
// the per-element definition, produced many elements and many samples at a time.
// Performance: one normal costs a Philox4x32-10 block (20 32x32->64-bit multiplies) and the
// log / cos polynomials of portable_math.hpp. A loop over elements calling portable_normal01 is
// not vectorised (the rounds are a loop inside it); written as rounds over arrays of kLanes counters
// (each round one loop over the lanes) it is, and the branch-free Box-Muller vectorises too. Labels take classes x in_dim
// multiply-adds per sample, each sample's in one dependent chain: kSampleLanes samples advance
// side by side, each in its own order, so the chains overlap and the adds vectorise across samples.
// Nothing here depends on the instruction set for its result (no FMA contraction:
// -ffp-contract=off, kernels/CMakeLists.txt; IEEE add, multiply and sqrt round the same in SSE and AVX).
#include <algorithm>
#include <cstdint>

#include "core/rng.hpp"
#include "kernels/portable_math.hpp"
#include "kernels/synthetic_data.hpp"

namespace microddp::kernels {

namespace {

// Counters per vectorised block. 64: GCC 12 fully unrolls a lane loop of 16 and then fails to
// vectorise the unrolled rounds (scalar 64-bit multiplies, 75 M normals/s of CPU time); at 32 or 64
// it vectorises the loop (pmuludq, 135 M/s). 64 keeps clear of that threshold.
constexpr int kLanes = 64;
// Samples whose label chains run side by side: four SSE vectors. Their rows are read strided: a
// transposed tile (contiguous vector loads) was tried and was slower, 5.5 vs 3.5 ms of CPU time for
// the labels of 512 rows x 2048 features x 10 classes.
constexpr int kSampleLanes = 16;

// out[i] = portable_normal01(seed, stream, first_counter + i), i < kLanes.
void normal_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t first_counter, float* out) {
  std::uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int i = 0; i < kLanes; ++i) {
    const std::uint64_t counter = first_counter + static_cast<std::uint64_t>(i);
    c0[i] = static_cast<std::uint32_t>(counter);
    c1[i] = static_cast<std::uint32_t>(counter >> 32);
    c2[i] = static_cast<std::uint32_t>(stream);
    c3[i] = static_cast<std::uint32_t>(stream >> 32);
  }
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < core::kPhiloxRounds; ++round) {
    for (int i = 0; i < kLanes; ++i) core::philox_round(c0[i], c1[i], c2[i], c3[i], k0, k1);
    k0 += core::kPhiloxWeyl0;
    k1 += core::kPhiloxWeyl1;
  }
  for (int i = 0; i < kLanes; ++i) out[i] = box_muller(c0[i], c1[i]);
}

// y[s] for kSampleLanes rows x[s * in_dim ...]: per class, the kSampleLanes scores advance together
// over j (each its own chain, in teacher_score's order); then the first largest, as teacher_label.
void label_block(const float* teacher, const float* x, std::int64_t in_dim, std::int64_t classes, std::int32_t* y) {
  float best_score[kSampleLanes];
  std::int32_t best[kSampleLanes];
  for (std::int64_t c = 0; c < classes; ++c) {
    const float* w = teacher + c * in_dim;
    float score[kSampleLanes] = {};
    for (std::int64_t j = 0; j < in_dim; ++j) {
      const float wj = w[j];
      for (int s = 0; s < kSampleLanes; ++s) score[s] = add_rn(score[s], mul_rn(wj, x[s * in_dim + j]));
    }
    for (int s = 0; s < kSampleLanes; ++s) {
      const bool better = c == 0 || score[s] > best_score[s];
      best_score[s] = better ? score[s] : best_score[s];
      best[s] = better ? static_cast<std::int32_t>(c) : best[s];
    }
  }
  std::copy(best, best + kSampleLanes, y);
}

}  // namespace

void portable_normal_fill(std::uint64_t seed, std::uint64_t stream, std::uint64_t first_counter, std::int64_t n,
                          float* out) {
  MDDP_CHECK(n >= 0, "portable_normal_fill: negative count " << n);
  const std::int64_t whole = n - n % kLanes;
  for (std::int64_t i = 0; i < whole; i += kLanes) {
    normal_block(seed, stream, first_counter + static_cast<std::uint64_t>(i), out + i);
  }
  if (whole < n) {  // the tail: a whole block into scratch, the same code and bits
    float tail[kLanes];
    normal_block(seed, stream, first_counter + static_cast<std::uint64_t>(whole), tail);
    std::copy(tail, tail + (n - whole), out + whole);
  }
}

void synthetic_rows_host(const SyntheticSpec& spec, std::int64_t first, std::int64_t count, float* x, std::int32_t* y) {
  check_synthetic_rows(spec, first, count, "synthetic_rows");
  const std::int64_t d = spec.in_dim;
  portable_normal_fill(spec.seed, spec.stream, static_cast<std::uint64_t>(first) * static_cast<std::uint64_t>(d),
                       count * d, x);
  const std::int64_t whole = count - count % kSampleLanes;
  for (std::int64_t s = 0; s < whole; s += kSampleLanes) label_block(spec.teacher, x + s * d, d, spec.classes, y + s);
  for (std::int64_t s = whole; s < count; ++s) y[s] = teacher_label(spec.teacher, x + s * d, d, spec.classes);
}

}  // namespace microddp::kernels
