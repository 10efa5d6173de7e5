// host_mirror.hpp — the host's view of an array in an Ops's device memory, written once for the
// parts that read or write device data from the host: checkpoints and the divergence check (the
// optimizer state, compression state), PowerSGD's host orthonormalisation, the input's upload.
//   CPU (Ops::device() == Host): the device array IS host memory, so the view is the array itself:
//       host() == device(), the copies do nothing, nothing is allocated (is_copy() is false);
//   GPU: a host copy that to_host() fills from the device array and from_host() copies back
//       (synchronous copies through the Ops, ordered after the work issued so far). A Staging::Pinned
//       mirror keeps its copy in the Ops's pinned staging memory, so from_host_async() can queue the
//       upload on the compute stream (the host must not touch the copy until a later synchronize()).
// The device array is either given (owned elsewhere, e.g. the model's parameters) or allocated by
// the mirror (allocate(): zero-filled device memory of its own).
// Contract: the Ops (and a given device array) outlive the mirror; it allocates when constructed
// only; a fresh GPU copy is zero-filled, not a copy of the device array (call to_host()).
#pragma once

#include <cstdint>
#include <utility>

#include "core/error.hpp"
#include "core/host_buffer.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"

namespace microddp::kernels {

// Where a GPU mirror keeps its host copy: plain memory for occasional synchronous copies
// (checkpoints), pinned staging memory for a copy uploaded every step.
enum class Staging : std::uint8_t { Pageable, Pinned };

template <typename T>
class HostMirror {
 public:
  HostMirror() = default;
  // The view of device[0, count) (memory of ops's device, owned by the caller).
  HostMirror(Ops& ops, T* device, std::int64_t count, Staging staging = Staging::Pageable)
      : ops_(&ops), device_(device), count_(count), host_(device) {
    MDDP_CHECK(count >= 0, "host mirror of " << count << " elements");
    if (ops.device() == core::Device::Host) return;
    if (staging == Staging::Pinned) {
      pinned_ = OpsHostBuffer<T>(ops, count);
      host_ = pinned_.data();
    } else {
      pageable_.resize(count);
      host_ = pageable_.data();
    }
  }
  // `count` zero-filled elements of ops's device memory of the mirror's own, and their view.
  static HostMirror allocate(Ops& ops, std::int64_t count, Staging staging = Staging::Pageable) {
    OpsBuffer<T> owned(ops, count);
    HostMirror m(ops, owned.data(), count, staging);
    m.owned_ = std::move(owned);
    return m;
  }

  T* host() { return host_; }
  const T* host() const { return host_; }
  T* device() { return device_; }
  const T* device() const { return device_; }
  std::int64_t count() const { return count_; }
  // Whether host() is a copy (a GPU) rather than the device array itself (the CPU).
  bool is_copy() const { return host_ != device_; }
  // Host memory this mirror allocated for its copy (0 on the CPU).
  std::int64_t staging_bytes() const { return pageable_.bytes() + pinned_.bytes(); }

  // host()[offset, offset + n) = the device array's elements there (nothing on the CPU).
  void to_host(std::int64_t offset, std::int64_t n) const {
    check_range(offset, n);
    if (is_copy() && n > 0) ops_->copy_to_host(host_ + offset, device_ + offset, bytes(n));
  }
  void to_host() const { to_host(0, count_); }
  // The device array's elements [offset, offset + n) = host()'s (nothing on the CPU).
  void from_host(std::int64_t offset, std::int64_t n) {
    check_range(offset, n);
    if (is_copy() && n > 0) ops_->copy_from_host(device_ + offset, host_ + offset, bytes(n));
  }
  void from_host() { from_host(0, count_); }
  // from_host(0, n) queued on the compute stream (Ops::copy_from_host_async): a Pinned mirror only.
  void from_host_async(std::int64_t n) {
    check_range(0, n);
    if (!is_copy() || n == 0) return;
    MDDP_CHECK(pinned_.data() != nullptr, "an asynchronous upload needs a Staging::Pinned mirror");
    ops_->copy_from_host_async(device_, host_, bytes(n));
  }

 private:
  static std::size_t bytes(std::int64_t n) { return static_cast<std::size_t>(n) * sizeof(T); }
  void check_range(std::int64_t offset, std::int64_t n) const {
    MDDP_CHECK(offset >= 0 && n >= 0 && offset + n <= count_,
               "mirror copy of [" << offset << ", " << offset + n << ") outside " << count_ << " elements");
  }
  Ops* ops_ = nullptr;
  T* device_ = nullptr;
  std::int64_t count_ = 0;
  T* host_ = nullptr;            // device_ on the CPU, the copy on a GPU
  OpsBuffer<T> owned_;           // allocate(): the device array
  core::HostBuffer<T> pageable_;  // GPU, Staging::Pageable: the copy
  OpsHostBuffer<T> pinned_;      // GPU, Staging::Pinned: the copy
};

}  // namespace microddp::kernels
