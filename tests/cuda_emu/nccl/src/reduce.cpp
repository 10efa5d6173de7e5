// reduce.cpp — element-wise reductions in a fixed order (reduce.hpp).
//
// Elements are processed in tiles: the accumulator tile starts as input 0's elements, each further input
// is folded in, then the tile is finalised (Avg) and stored. A tile is read completely from every input
// before it is stored, which is what makes `out` aliasing an input (in-place) safe.
#include "reduce.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "half_float.hpp"

namespace cuda_emu::nccl {

namespace {

// Elements per tile: the accumulator (at most 2048 x 8 bytes) stays in L1 next to the input tiles.
constexpr std::size_t kTile = 2048;

// How elements of one data type are loaded into and stored from the accumulator type.
template <typename T>
struct Native {
  using Storage = T;
  using Acc = T;
  static Acc load(Storage v) { return v; }
  static Storage store(Acc a) { return a; }
};
struct Half {
  using Storage = std::uint16_t;
  using Acc = float;
  static Acc load(Storage v) { return half_to_float(v); }
  static Storage store(Acc a) { return float_to_half(a); }
};
struct Bf16 {
  using Storage = std::uint16_t;
  using Acc = float;
  static Acc load(Storage v) { return bf16_to_float(v); }
  static Storage store(Acc a) { return float_to_bf16(a); }
};

template <typename Acc>
Acc combine(ncclRedOp_t op, Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) {
    using U = std::make_unsigned_t<Acc>;  // wrap-around arithmetic without signed overflow
    switch (op) {
      case ncclProd:
        return static_cast<Acc>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case ncclMax:
        return std::max(a, b);
      case ncclMin:
        return std::min(a, b);
      default:
        return static_cast<Acc>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));  // Sum, Avg
    }
  } else {
    switch (op) {
      case ncclProd:
        return a * b;
      case ncclMax:
        return std::fmax(a, b);
      case ncclMin:
        return std::fmin(a, b);
      default:
        return a + b;  // Sum, Avg
    }
  }
}

template <typename Traits, ncclRedOp_t Op>
void reduce_typed(void* out, const void* const* inputs, int k, std::size_t count) {
  using Storage = typename Traits::Storage;
  using Acc = typename Traits::Acc;
  Acc acc[kTile];
  Storage tile[kTile];
  for (std::size_t start = 0; start < count; start += kTile) {
    const std::size_t len = std::min(kTile, count - start);
    const std::size_t offset = start * sizeof(Storage), bytes = len * sizeof(Storage);
    std::memcpy(tile, static_cast<const char*>(inputs[0]) + offset, bytes);  // memcpy: no alignment assumption
    for (std::size_t i = 0; i < len; ++i) acc[i] = Traits::load(tile[i]);
    for (int j = 1; j < k; ++j) {
      std::memcpy(tile, static_cast<const char*>(inputs[j]) + offset, bytes);
      for (std::size_t i = 0; i < len; ++i) acc[i] = combine<Acc>(Op, acc[i], Traits::load(tile[i]));
    }
    if constexpr (Op == ncclAvg) {
      const Acc divisor = static_cast<Acc>(k);
      for (std::size_t i = 0; i < len; ++i) acc[i] = static_cast<Acc>(acc[i] / divisor);
    }
    for (std::size_t i = 0; i < len; ++i) tile[i] = Traits::store(acc[i]);
    std::memcpy(static_cast<char*>(out) + offset, tile, bytes);
  }
}

template <typename Traits>
void reduce_op(void* out, const void* const* inputs, int k, std::size_t count, ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
      return reduce_typed<Traits, ncclSum>(out, inputs, k, count);
    case ncclProd:
      return reduce_typed<Traits, ncclProd>(out, inputs, k, count);
    case ncclMax:
      return reduce_typed<Traits, ncclMax>(out, inputs, k, count);
    case ncclMin:
      return reduce_typed<Traits, ncclMin>(out, inputs, k, count);
    case ncclAvg:
      return reduce_typed<Traits, ncclAvg>(out, inputs, k, count);
    default:
      return;  // refused at the API (op_supported)
  }
}

}  // namespace

void reduce_in_order(void* out, const void* const* inputs, int k, std::size_t count, ncclDataType_t dtype,
                     ncclRedOp_t op) {
  if (count == 0 || k <= 0) return;
  switch (dtype) {
    case ncclInt8:
      return reduce_op<Native<std::int8_t>>(out, inputs, k, count, op);
    case ncclUint8:
      return reduce_op<Native<std::uint8_t>>(out, inputs, k, count, op);
    case ncclInt32:
      return reduce_op<Native<std::int32_t>>(out, inputs, k, count, op);
    case ncclUint32:
      return reduce_op<Native<std::uint32_t>>(out, inputs, k, count, op);
    case ncclInt64:
      return reduce_op<Native<std::int64_t>>(out, inputs, k, count, op);
    case ncclUint64:
      return reduce_op<Native<std::uint64_t>>(out, inputs, k, count, op);
    case ncclFloat16:
      return reduce_op<Half>(out, inputs, k, count, op);
    case ncclBfloat16:
      return reduce_op<Bf16>(out, inputs, k, count, op);
    case ncclFloat32:
      return reduce_op<Native<float>>(out, inputs, k, count, op);
    case ncclFloat64:
      return reduce_op<Native<double>>(out, inputs, k, count, op);
    default:
      return;  // refused at the API (dtype_bytes == 0)
  }
}

}  // namespace cuda_emu::nccl
