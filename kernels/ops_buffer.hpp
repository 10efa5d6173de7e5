// ops_buffer.hpp — an owning, move-only array of T in the memory of one Ops's device (host memory
// for CpuOps, GPU memory for CudaOps), so the model, the optimizer and the trainer keep one code
// path for both devices.
// Contract: memory comes from Ops::allocate_bytes (zero-filled) in the constructor only; the Ops
// must outlive the buffer. data() is a device() pointer: on the GPU it must never be dereferenced
// on the host; move bytes with to_host()/from_host() (explicit, synchronous copies).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/error.hpp"
#include "core/tensor_view.hpp"
#include "kernels/ops.hpp"

namespace microddp::kernels {

template <typename T>
class OpsBuffer {
 public:
  OpsBuffer() = default;
  OpsBuffer(Ops& ops, std::int64_t count) : ops_(&ops) {
    MDDP_CHECK(count >= 0, "negative buffer count " << count);
    data_ = static_cast<T*>(ops.allocate_bytes(static_cast<std::size_t>(count) * sizeof(T)));
    count_ = count;
  }
  OpsBuffer(const OpsBuffer&) = delete;
  OpsBuffer& operator=(const OpsBuffer&) = delete;
  OpsBuffer(OpsBuffer&& o) noexcept
      : ops_(std::exchange(o.ops_, nullptr)), data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  OpsBuffer& operator=(OpsBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ops_ = std::exchange(o.ops_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  ~OpsBuffer() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::int64_t count() const { return count_; }
  std::int64_t bytes() const { return count_ * static_cast<std::int64_t>(sizeof(T)); }
  core::Device device() const { return ops_ != nullptr ? ops_->device() : core::Device::Host; }
  core::TensorView view() { return core::TensorView::of(data_, count_, device()); }

  // Elements [offset, offset + n) to / from host memory (synchronous copies through the Ops).
  void to_host(T* dst, std::int64_t offset, std::int64_t n) const {
    check_range(offset, n);
    if (n > 0) ops_->copy_to_host(dst, data_ + offset, static_cast<std::size_t>(n) * sizeof(T));
  }
  void from_host(const T* src, std::int64_t offset, std::int64_t n) {
    check_range(offset, n);
    if (n > 0) ops_->copy_from_host(data_ + offset, src, static_cast<std::size_t>(n) * sizeof(T));
  }

 private:
  void check_range(std::int64_t offset, std::int64_t n) const {
    MDDP_CHECK(offset >= 0 && n >= 0 && offset + n <= count_,
               "copy of [" << offset << ", " << offset + n << ") outside a buffer of " << count_);
  }
  void release() noexcept {
    if (ops_ != nullptr && data_ != nullptr) ops_->free_bytes(data_);
    data_ = nullptr;
    count_ = 0;
  }
  Ops* ops_ = nullptr;
  T* data_ = nullptr;
  std::int64_t count_ = 0;
};

// An owning, move-only array of T in host staging memory of an Ops (Ops::allocate_host_bytes:
// pinned on a GPU, so Ops::copy_from_host_async / copy_to_host_async on it are truly asynchronous).
// Zero-filled, allocated in the constructor only; the Ops must outlive it.
template <typename T>
class OpsHostBuffer {
 public:
  OpsHostBuffer() = default;
  OpsHostBuffer(Ops& ops, std::int64_t count) : ops_(&ops) {
    MDDP_CHECK(count >= 0, "negative buffer count " << count);
    data_ = static_cast<T*>(ops.allocate_host_bytes(static_cast<std::size_t>(count) * sizeof(T)));
    count_ = count;
  }
  OpsHostBuffer(const OpsHostBuffer&) = delete;
  OpsHostBuffer& operator=(const OpsHostBuffer&) = delete;
  OpsHostBuffer(OpsHostBuffer&& o) noexcept
      : ops_(std::exchange(o.ops_, nullptr)), data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  OpsHostBuffer& operator=(OpsHostBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ops_ = std::exchange(o.ops_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  ~OpsHostBuffer() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](std::int64_t i) { return data_[i]; }
  const T& operator[](std::int64_t i) const { return data_[i]; }
  std::int64_t count() const { return count_; }

 private:
  void release() noexcept {
    if (ops_ != nullptr && data_ != nullptr) ops_->free_host_bytes(data_);
    data_ = nullptr;
    count_ = 0;
  }
  Ops* ops_ = nullptr;
  T* data_ = nullptr;
  std::int64_t count_ = 0;
};

}  // namespace microddp::kernels
