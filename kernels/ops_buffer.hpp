// ops_buffer.hpp — owning, move-only arrays of T whose memory an Ops provides, so the model, the
// optimizer and the trainer keep one code path for both devices:
//   * OpsBuffer<T>: memory of the Ops's device (host memory for CpuOps, GPU memory for CudaOps),
//     from Ops::allocate_bytes. data() is a device() pointer: on the GPU it must never be
//     dereferenced on the host; move bytes with to_host()/from_host() (explicit, synchronous copies).
//   * OpsHostBuffer<T>: host staging memory of the Ops (Ops::allocate_host_bytes: pinned on a GPU,
//     so Ops::copy_from_host_async / copy_to_host_async on it are truly asynchronous); the host reads
//     and writes it directly.
// Contract (both): zero-filled, allocated in the constructor only, released through the same Ops,
// which must outlive the buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/error.hpp"
#include "core/tensor_view.hpp"
#include "kernels/ops.hpp"

namespace microddp::kernels {

enum class OpsMemory : std::uint8_t { Device, HostStaging };

template <typename T, OpsMemory kMemory>
class BasicOpsBuffer {
 public:
  BasicOpsBuffer() = default;
  BasicOpsBuffer(Ops& ops, std::int64_t count) : ops_(&ops) {
    MDDP_CHECK(count >= 0, "negative buffer count " << count);
    const auto bytes = static_cast<std::size_t>(count) * sizeof(T);
    data_ = static_cast<T*>(kMemory == OpsMemory::Device ? ops.allocate_bytes(bytes) : ops.allocate_host_bytes(bytes));
    count_ = count;
  }
  BasicOpsBuffer(const BasicOpsBuffer&) = delete;
  BasicOpsBuffer& operator=(const BasicOpsBuffer&) = delete;
  BasicOpsBuffer(BasicOpsBuffer&& o) noexcept
      : ops_(std::exchange(o.ops_, nullptr)),
        data_(std::exchange(o.data_, nullptr)),
        count_(std::exchange(o.count_, 0)) {}
  BasicOpsBuffer& operator=(BasicOpsBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ops_ = std::exchange(o.ops_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  ~BasicOpsBuffer() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::int64_t count() const { return count_; }
  std::int64_t bytes() const { return count_ * static_cast<std::int64_t>(sizeof(T)); }

  // ---- device memory ----
  core::Device device() const requires(kMemory == OpsMemory::Device) {
    return ops_ != nullptr ? ops_->device() : core::Device::Host;
  }
  core::TensorView view() requires(kMemory == OpsMemory::Device) {
    return core::TensorView::of(data_, count_, device());
  }
  // Elements [offset, offset + n) to / from host memory (synchronous copies through the Ops).
  void to_host(T* dst, std::int64_t offset, std::int64_t n) const requires(kMemory == OpsMemory::Device) {
    check_range(offset, n);
    if (n > 0) ops_->copy_to_host(dst, data_ + offset, static_cast<std::size_t>(n) * sizeof(T));
  }
  void from_host(const T* src, std::int64_t offset, std::int64_t n) requires(kMemory == OpsMemory::Device) {
    check_range(offset, n);
    if (n > 0) ops_->copy_from_host(data_ + offset, src, static_cast<std::size_t>(n) * sizeof(T));
  }

  // ---- host staging memory ----
  T& operator[](std::int64_t i) requires(kMemory == OpsMemory::HostStaging) { return data_[i]; }
  const T& operator[](std::int64_t i) const requires(kMemory == OpsMemory::HostStaging) { return data_[i]; }

 private:
  void check_range(std::int64_t offset, std::int64_t n) const {
    MDDP_CHECK(offset >= 0 && n >= 0 && offset + n <= count_,
               "copy of [" << offset << ", " << offset + n << ") outside a buffer of " << count_);
  }
  void release() noexcept {
    if (ops_ != nullptr && data_ != nullptr) {
      if constexpr (kMemory == OpsMemory::Device) {
        ops_->free_bytes(data_);
      } else {
        ops_->free_host_bytes(data_);
      }
    }
    data_ = nullptr;
    count_ = 0;
  }
  Ops* ops_ = nullptr;
  T* data_ = nullptr;
  std::int64_t count_ = 0;
};

template <typename T>
using OpsBuffer = BasicOpsBuffer<T, OpsMemory::Device>;
template <typename T>
using OpsHostBuffer = BasicOpsBuffer<T, OpsMemory::HostStaging>;

}  // namespace microddp::kernels
