// blas_common.hpp — what the emulated cuBLAS (cublas.cpp) and cuBLASLt (cublas_lt.cpp) share: the
// operand checks (device memory of the handle's device, the whole stored matrix inside its
// allocation), TF32 rounding and the element types of the operands.
// Contract: column-major stored matrices (rows, cols) with leading dimension ld; the checks print
// one line on stderr and return CUBLAS_STATUS_INVALID_VALUE, as the emulated APIs report misuse.
#pragma once

#include <cublas_v2.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "memory.hpp"

namespace cuda_emu::blas {

inline cublasStatus_t misuse(const char* api, const std::string& what) {
  std::fprintf(stderr, "cuda_emu: %s: %s\n", api, what.c_str());
  return CUBLAS_STATUS_INVALID_VALUE;
}

// Rounds to TF32: keep the sign, the 8 exponent bits and the top 10 mantissa bits; round to nearest,
// ties away from zero (add half of the dropped range, then truncate). Inf and NaN pass unchanged.
inline float round_to_tf32(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) != 0x7f800000u) {
    constexpr std::uint32_t kDropped = 13;  // 23 - 10 mantissa bits
    u += 1u << (kDropped - 1);
    u &= ~((1u << kDropped) - 1);
  }
  float y;
  std::memcpy(&y, &u, sizeof y);
  return y;
}

// The element types the emulated GEMMs take: fp32, or bf16 bit patterns (cublasGemmEx).
enum class Elem { F32, BF16 };
inline std::size_t elem_bytes(Elem e) { return e == Elem::F32 ? sizeof(float) : sizeof(std::uint16_t); }

// Bytes of a stored column-major matrix (rows, cols) with leading dimension ld.
inline std::size_t stored_bytes(int rows, int cols, int ld, Elem e) {
  return (static_cast<std::size_t>(ld) * static_cast<std::size_t>(cols - 1) + static_cast<std::size_t>(rows)) *
         elem_bytes(e);
}

// A column-major operand op(X) of shape (rows, cols) stored with leading dimension ld: checks it is
// device memory of `device` holding ld * (stored_cols - 1) + stored_rows elements.
inline cublasStatus_t check_operand(const char* api, const char* name, const void* p, int stored_rows, int stored_cols,
                                    int ld, Elem e, int device) {
  const std::size_t need = stored_bytes(stored_rows, stored_cols, ld, e);
  bool overrun = false;
  const PointerInfo info = Memory::get().lookup_range(p, need, &overrun);
  if (info.kind != MemoryKind::Device || info.device != device) {
    return misuse(api, std::string(name) + " is not device memory of device " + std::to_string(device));
  }
  if (overrun) {
    return misuse(api, std::string(name) + " needs " + std::to_string(need) + " bytes, past its allocation");
  }
  return CUBLAS_STATUS_SUCCESS;
}

// Copy of a stored column-major bf16 matrix as floats (a bf16 is the high half of a float: exact).
inline std::vector<float> bf16_copy(const void* p, int rows, int cols, int ld) {
  const auto* bits = static_cast<const std::uint16_t*>(p);
  std::vector<float> out(static_cast<std::size_t>(ld) * static_cast<std::size_t>(cols - 1) +
                         static_cast<std::size_t>(rows));
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) {
      const std::size_t at = static_cast<std::size_t>(j) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(i);
      const std::uint32_t u = static_cast<std::uint32_t>(bits[at]) << 16;
      std::memcpy(&out[at], &u, sizeof(float));
    }
  }
  return out;
}

// Copy of a stored column-major matrix with every element rounded to TF32.
inline std::vector<float> tf32_copy(const float* p, int rows, int cols, int ld) {
  std::vector<float> out(static_cast<std::size_t>(ld) * static_cast<std::size_t>(cols - 1) +
                         static_cast<std::size_t>(rows));
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) {
      const std::size_t at = static_cast<std::size_t>(j) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(i);
      out[at] = round_to_tf32(p[at]);
    }
  }
  return out;
}

}  // namespace cuda_emu::blas
