// f16_arrays.cpp — see f16_arrays.hpp.
#include "kernels/cpu/f16_arrays.hpp"

#include <atomic>
#include <cstring>

#include "core/error.hpp"
#include "kernels/elementwise.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define MDDP_F16C_BUILD 1
#else
#define MDDP_F16C_BUILD 0
#endif

namespace microddp::kernels {

void f16_encode_array_scalar(const float* src, std::uint16_t* dst, float* residual, std::int64_t n) {
  if (residual != nullptr) {
    for (std::int64_t i = 0; i < n; ++i) residual[i] = wire16_encode_residual(Wire16::F16, src[i], dst + i);
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = float_to_f16_bits(src[i]);
  }
}

void f16_decode_array_scalar(const std::uint16_t* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = f16_bits_to_float(src[i]);
}

void f16_sum_array_scalar(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = wire16_reduce_pair(Wire16::F16, core::ReduceOp::Sum, a[i], b[i]);
}

#if MDDP_F16C_BUILD

// CPUID leaf 1, ECX: AVX (bit 28), F16C (bit 29), and OSXSAVE (bit 27) with XCR0 showing that the
// operating system saves the YMM registers (bits 1 and 2). Read directly: clang's
// __builtin_cpu_supports knows no "f16c".
bool f16_simd_supported() {
  static const bool supported = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    const bool osxsave = (ecx >> 27) & 1u, avx = (ecx >> 28) & 1u, f16c = (ecx >> 29) & 1u;
    if (!(osxsave && avx && f16c)) return false;
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    return (xcr0_lo & 0x6u) == 0x6u;
  }();
  return supported;
}

// The loops below are compiled for AVX+F16C only (target attribute), and only called after the
// run-time check: the rest of the program keeps the baseline x86-64 instruction set.
namespace {

constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

__attribute__((target("avx,f16c"))) inline bool any_nan(__m256 v) {
  return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0;
}

__attribute__((target("avx,f16c"))) void encode_simd(const float* src, std::uint16_t* dst, float* residual,
                                                     std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(src + i);
    if (any_nan(x)) {  // canonical NaN bits, as the scalar code writes them
      f16_encode_array_scalar(src + i, dst + i, residual != nullptr ? residual + i : nullptr, 8);
      continue;
    }
    const __m128i h = _mm256_cvtps_ph(x, kRne);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    if (residual != nullptr) _mm256_storeu_ps(residual + i, _mm256_sub_ps(x, _mm256_cvtph_ps(h)));
  }
  f16_encode_array_scalar(src + i, dst + i, residual != nullptr ? residual + i : nullptr, n - i);
}

__attribute__((target("avx,f16c"))) void decode_simd(const std::uint16_t* src, float* dst, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    if (any_nan(x)) {  // the scalar decode keeps a signalling NaN's bits; F16C quiets it
      f16_decode_array_scalar(src + i, dst + i, 8);
      continue;
    }
    _mm256_storeu_ps(dst + i, x);
  }
  f16_decode_array_scalar(src + i, dst + i, n - i);
}

__attribute__((target("avx,f16c"))) void sum_simd(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b,
                                                  std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    const __m256 s = _mm256_add_ps(x, y);
    if (any_nan(s)) {  // a NaN operand, or inf + -inf: canonical NaN bits from the scalar code
      f16_sum_array_scalar(dst + i, a + i, b + i, 8);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(s, kRne));
  }
  f16_sum_array_scalar(dst + i, a + i, b + i, n - i);
}

}  // namespace

void f16_encode_array_simd(const float* src, std::uint16_t* dst, float* residual, std::int64_t n) {
  MDDP_CHECK(f16_simd_supported(), "f16_encode_array_simd: this processor has no F16C");
  encode_simd(src, dst, residual, n);
}
void f16_decode_array_simd(const std::uint16_t* src, float* dst, std::int64_t n) {
  MDDP_CHECK(f16_simd_supported(), "f16_decode_array_simd: this processor has no F16C");
  decode_simd(src, dst, n);
}
void f16_sum_array_simd(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n) {
  MDDP_CHECK(f16_simd_supported(), "f16_sum_array_simd: this processor has no F16C");
  sum_simd(dst, a, b, n);
}

#else  // not x86: the scalar code only

bool f16_simd_supported() { return false; }
void f16_encode_array_simd(const float*, std::uint16_t*, float*, std::int64_t) {
  MDDP_CHECK(false, "f16_encode_array_simd: F16C is an x86 instruction set");
}
void f16_decode_array_simd(const std::uint16_t*, float*, std::int64_t) {
  MDDP_CHECK(false, "f16_decode_array_simd: F16C is an x86 instruction set");
}
void f16_sum_array_simd(std::uint16_t*, const std::uint16_t*, const std::uint16_t*, std::int64_t) {
  MDDP_CHECK(false, "f16_sum_array_simd: F16C is an x86 instruction set");
}

#endif

namespace {
// The program's choice (set_f16_simd_allowed); read on communication and compute threads alike.
std::atomic<bool> g_simd_allowed{true};
}  // namespace

void set_f16_simd_allowed(bool allowed) { g_simd_allowed.store(allowed, std::memory_order_relaxed); }

bool f16_simd_enabled() {
  static const bool supported = f16_simd_supported();
  return supported && g_simd_allowed.load(std::memory_order_relaxed);
}

void f16_encode_array(const float* src, std::uint16_t* dst, float* residual, std::int64_t n) {
  if (f16_simd_enabled()) {
    f16_encode_array_simd(src, dst, residual, n);
  } else {
    f16_encode_array_scalar(src, dst, residual, n);
  }
}

void f16_decode_array(const std::uint16_t* src, float* dst, std::int64_t n) {
  if (f16_simd_enabled()) {
    f16_decode_array_simd(src, dst, n);
  } else {
    f16_decode_array_scalar(src, dst, n);
  }
}

void f16_sum_array(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n) {
  if (f16_simd_enabled()) {
    f16_sum_array_simd(dst, a, b, n);
  } else {
    f16_sum_array_scalar(dst, a, b, n);
  }
}

}  // namespace microddp::kernels
