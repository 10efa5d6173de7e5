// orthonormalize.hpp — PowerSGD's orthogonalisation step: the columns of a tall matrix made
// orthonormal, on the host, deterministically.
//
// Contract: p is (rows, cols) row-major, cols <= rows. Modified Gram-Schmidt in double, run twice
// ("twice is enough", Giraud et al. 2005: one pass loses orthogonality when columns are nearly
// dependent, a second pass restores it to working precision). A column whose remainder after
// projection is below 1e-10 of its norm before (numerically dependent: the matrix has lower rank
// than cols) becomes zero, so it contributes nothing instead of amplified rounding noise.
// The result is a pure function of the input bits (fixed loop order, no threads, no BLAS), so all
// ranks, which hold the same all-reduced P, compute the same bits.
#pragma once

#include <cstdint>

namespace microddp::ddp {

void orthonormalize_columns(float* p, std::int64_t rows, std::int64_t cols);

}  // namespace microddp::ddp
