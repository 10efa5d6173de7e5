// dtype.hpp — element types and where data lives. Sizes in bytes per element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace microddp::core {

// F16 / BF16: 16-bit floats stored as their bits (uint16_t): IEEE half and bfloat16, the wire
// formats of gradient compression (kernels/elementwise.hpp converts; collectives accumulate in fp32).
enum class DType : std::uint8_t { F32, F64, I32, I64, F16, BF16 };
enum class Device : std::uint8_t { Host, Cuda };

constexpr std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::F32:
      return 4;
    case DType::F64:
      return 8;
    case DType::I32:
      return 4;
    case DType::I64:
      return 8;
    case DType::F16:
    case DType::BF16:
      return 2;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::F64:
      return "f64";
    case DType::I32:
      return "i32";
    case DType::I64:
      return "i64";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
  }
  return "?";
}

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::F64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::I32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::I64;
}

}  // namespace microddp::core
