// f16_arrays.hpp — fp16 <-> fp32 conversion of whole host arrays (the `--grad-compression fp16` wire
// format), with the x86 F16C instructions where the processor has them, chosen at run time.
//
// Why: the scalar conversion (elementwise.hpp float_to_f16_bits) needs branches for the fp16 range
// and its subnormals, which GCC does not vectorise: the fp16 encode ran ~5-7x slower than bf16's
// (docs/compression.md). F16C converts 8 values per instruction with IEEE round-to-nearest-even.
//
// Contract: every function here gives results bit-identical to the scalar element functions of
// elementwise.hpp, for every input. The hardware and the scalar code agree on every non-NaN value
// (rounding, subnormals, overflow to inf); they differ only in NaN payloads (F16C keeps and quiets
// a payload, ours returns the canonical quiet NaN), so a block of 8 that contains a NaN is redone
// with the scalar functions. Ranks on different processors (with and without F16C) therefore still
// exchange identical bits. Tested exhaustively on the rounding-relevant bits (tests/kernels).
//
// The library reads no environment: the program decides whether the SIMD path may run
// (set_f16_simd_allowed; `microddp` reads MICRODDP_F16_SIMD=0 at start-up, app/comm_settings.hpp).
#pragma once

#include <cstdint>

namespace microddp::kernels {

// True when the SIMD path is used: an x86 processor with AVX and F16C, and the program allows it.
bool f16_simd_enabled();
// Allows (the default) or forbids the SIMD path for the rest of the process. Results are the same
// bits either way (the contract above); the switch exists to time and test the scalar path alone.
void set_f16_simd_allowed(bool allowed);

// dst[i] = float_to_f16_bits(src[i]); with residual: residual[i] = src[i] - f16_bits_to_float(dst[i]).
void f16_encode_array(const float* src, std::uint16_t* dst, float* residual, std::int64_t n);
// dst[i] = f16_bits_to_float(src[i]).
void f16_decode_array(const std::uint16_t* src, float* dst, std::int64_t n);
// dst[i] = float_to_f16_bits(f16_bits_to_float(a[i]) + f16_bits_to_float(b[i])): one hop of a
// 16-bit sum all-reduce (elementwise.hpp wire16_reduce_pair). dst may alias a or b.
void f16_sum_array(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n);

// The two implementations on their own, for the tests and `bench compute` (side by side).
void f16_encode_array_scalar(const float* src, std::uint16_t* dst, float* residual, std::int64_t n);
void f16_decode_array_scalar(const std::uint16_t* src, float* dst, std::int64_t n);
void f16_sum_array_scalar(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n);
// Only where f16_simd_supported() (else they throw).
bool f16_simd_supported();  // the processor has AVX and F16C (whatever MICRODDP_F16_SIMD says)
void f16_encode_array_simd(const float* src, std::uint16_t* dst, float* residual, std::int64_t n);
void f16_decode_array_simd(const std::uint16_t* src, float* dst, std::int64_t n);
void f16_sum_array_simd(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b, std::int64_t n);

}  // namespace microddp::kernels
