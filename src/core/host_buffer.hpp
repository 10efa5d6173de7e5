// host_buffer.hpp — owning, 64-byte-aligned host array of T (move-only).
// Contract: allocation happens only in the constructor / resize(); elements are value-initialised
// (zero) so a fresh buffer never holds garbage. Used for all start-up-sized buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "core/aligned_alloc.hpp"
#include "core/error.hpp"
#include "core/tensor_view.hpp"

namespace microddp::core {

template <typename T>
class HostBuffer {
 public:
  // 64 bytes: one cache line and one AVX-512 vector, so BLAS and vector loops start aligned.
  static constexpr std::size_t kAlignment = 64;

  HostBuffer() = default;
  explicit HostBuffer(std::int64_t count) { resize(count); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  HostBuffer(HostBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  ~HostBuffer() { release(); }

  void resize(std::int64_t count) {
    MDDP_CHECK(count >= 0, "negative buffer count " << count);
    release();
    if (count == 0) return;
    data_ =
        static_cast<T*>(aligned_zeroed_alloc(static_cast<std::size_t>(count) * sizeof(T), kAlignment, "HostBuffer"));
    count_ = count;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::int64_t count() const { return count_; }
  std::int64_t bytes() const { return count_ * static_cast<std::int64_t>(sizeof(T)); }
  T& operator[](std::int64_t i) { return data_[i]; }
  const T& operator[](std::int64_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + count_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + count_; }
  TensorView view() { return TensorView::of(data_, count_); }

 private:
  void release() {
    std::free(data_);
    data_ = nullptr;
    count_ = 0;
  }
  T* data_ = nullptr;
  std::int64_t count_ = 0;
};

}  // namespace microddp::core
