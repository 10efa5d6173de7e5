// emu_nccl_test_util.hpp — helpers shared by the emulated NCCL's tests: RAII device buffers and
// streams over the CUDA runtime API, NCCL/CUDA result assertions, process resource counts for leak checks, and the
// element encodings (fp16, bf16) the tests compute their expected values with — independently of the
// library's own converters.
#pragma once

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace emu_test {

#define EMU_CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr
#define EMU_NCCL_OK(expr)                                                                      \
  do {                                                                                         \
    const ncclResult_t emu_rc_ = (expr);                                                       \
    ASSERT_EQ(emu_rc_, ncclSuccess) << #expr << ": " << ncclGetErrorString(emu_rc_) << " — " \
                                    << ncclGetLastError(nullptr);                              \
  } while (0)

// cudaMalloc'd memory of the current device (at least one byte, so even count 0 has an address).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&p_, bytes == 0 ? 1 : bytes) != cudaSuccess) p_ = nullptr;
  }
  ~DeviceBuffer() { (void)cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  char* bytes_at(std::size_t offset) const { return static_cast<char*>(p_) + offset; }
  std::size_t size() const { return bytes_; }
  void upload(const void* host, std::size_t bytes, std::size_t offset = 0) const {
    if (bytes > 0) (void)cudaMemcpy(bytes_at(offset), host, bytes, cudaMemcpyHostToDevice);
  }
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const {
    if (bytes > 0) (void)cudaMemcpy(host, bytes_at(offset), bytes, cudaMemcpyDeviceToHost);
  }
  std::vector<unsigned char> download_all() const {
    std::vector<unsigned char> v(bytes_);
    download(v.data(), bytes_);
    return v;
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

class Stream {
 public:
  Stream() { (void)cudaStreamCreate(&s_); }
  ~Stream() { (void)cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }
  void sync() const { (void)cudaStreamSynchronize(s_); }

 private:
  cudaStream_t s_ = nullptr;
};

// Enqueues a host-side sleep on `stream` (holds back everything queued after it).
inline void stream_sleep(cudaStream_t stream, int ms) {
  static_assert(sizeof(void*) >= sizeof(std::intptr_t));
  (void)cudaLaunchHostFunc(
      stream,
      [](void* p) { std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<std::intptr_t>(p))); },
      reinterpret_cast<void*>(static_cast<std::intptr_t>(ms)));
}

inline int open_fd_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

inline int thread_count() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// Polls `pred` until it holds or `seconds` pass.
inline bool eventually(const std::function<bool()>& pred, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// ---- element encodings (test-side references) ----------------------------------------------------

inline std::size_t element_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

inline bool is_unsigned(ncclDataType_t t) { return t == ncclUint8 || t == ncclUint32 || t == ncclUint64; }
inline bool is_floating(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclBfloat16 || t == ncclFloat32 || t == ncclFloat64;
}

// float -> fp16 by the compiler's _Float16 conversion (round to nearest even).
inline std::uint16_t ref_half(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline float ref_half_to_float(std::uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return static_cast<float>(h);
}
inline float ref_bf16_to_float(std::uint16_t u) {
  const std::uint32_t x = static_cast<std::uint32_t>(u) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
// float -> bf16 by brute force: the nearer of the two truncation neighbours, ties to the even one
// (finite inputs whose neighbours are finite; enough for the test values).
inline std::uint16_t ref_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const auto lo = static_cast<std::uint16_t>(x >> 16);
  const auto hi = static_cast<std::uint16_t>(lo + 1);
  const double dlo = std::fabs(static_cast<double>(f) - ref_bf16_to_float(lo));
  const double dhi = std::fabs(static_cast<double>(ref_bf16_to_float(hi)) - f);
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1) == 0 ? lo : hi;
}

// Writes value `v` (an integer, or any float for float types) as element i of `out` in type t.
inline void put_element(ncclDataType_t t, void* out, std::size_t i, double v) {
  char* p = static_cast<char*>(out) + i * element_bytes(t);
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (t) {
    case ncclInt8:
      put(static_cast<std::int8_t>(v));
      break;
    case ncclUint8:
      put(static_cast<std::uint8_t>(v));
      break;
    case ncclInt32:
      put(static_cast<std::int32_t>(v));
      break;
    case ncclUint32:
      put(static_cast<std::uint32_t>(v));
      break;
    case ncclInt64:
      put(static_cast<std::int64_t>(v));
      break;
    case ncclUint64:
      put(static_cast<std::uint64_t>(v));
      break;
    case ncclFloat16:
      put(ref_half(static_cast<float>(v)));
      break;
    case ncclBfloat16:
      put(ref_bf16(static_cast<float>(v)));
      break;
    case ncclFloat32:
      put(static_cast<float>(v));
      break;
    default:
      put(v);
      break;
  }
}

inline const char* type_name(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "float16";
    case ncclBfloat16:
      return "bfloat16";
    case ncclFloat32:
      return "float32";
    default:
      return "float64";
  }
}

inline const char* op_label(ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
      return "sum";
    case ncclProd:
      return "prod";
    case ncclMax:
      return "max";
    case ncclMin:
      return "min";
    default:
      return "avg";
  }
}

inline constexpr ncclDataType_t kAllTypes[] = {ncclInt8,   ncclUint8,   ncclInt32,    ncclUint32,  ncclInt64,
                                               ncclUint64, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64};
inline constexpr ncclRedOp_t kAllOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

}  // namespace emu_test
