// tensor_view.hpp — a non-owning view: pointer, element count, dtype, device.
// Contract: counts are 64-bit element counts (never bytes); a view never frees memory. Shapes are
// the caller's business (documented at each declaration); the communicator only needs flat views.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace microddp::core {

struct TensorView {
  void* data = nullptr;
  std::int64_t count = 0;  // elements
  DType dtype = DType::F32;
  Device device = Device::Host;

  TensorView() = default;
  TensorView(void* d, std::int64_t n, DType t, Device dev = Device::Host) : data(d), count(n), dtype(t), device(dev) {}

  template <typename T>
  static TensorView of(T* p, std::int64_t n, Device dev = Device::Host) {
    return TensorView(static_cast<void*>(p), n, dtype_of<T>(), dev);
  }

  std::int64_t bytes() const { return count * static_cast<std::int64_t>(dtype_bytes(dtype)); }

  template <typename T>
  T* as() const {
    MDDP_CHECK(dtype == dtype_of<T>(),
               "TensorView dtype is " << dtype_name(dtype) << ", asked for " << dtype_name(dtype_of<T>()));
    return static_cast<T*>(data);
  }

  // Address of element `offset` (byte arithmetic, the view being untyped; no bounds check, so that the
  // address one past a block can be compared with another view's start, as in-place tests do).
  char* address_of(std::int64_t offset) const {
    return static_cast<char*>(data) + offset * static_cast<std::int64_t>(dtype_bytes(dtype));
  }

  // Elements [offset, offset + n) of this view.
  TensorView slice(std::int64_t offset, std::int64_t n) const {
    MDDP_CHECK(offset >= 0 && n >= 0 && offset + n <= count,
               "slice [" << offset << ", " << offset + n << ") outside view of " << count);
    return TensorView(address_of(offset), n, dtype, device);
  }
};

}  // namespace microddp::core
