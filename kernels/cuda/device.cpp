// device.cpp — CUDA device discovery (see device.hpp for the contract).
#include "kernels/cuda/device.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "kernels/cuda/cuda_check.hpp"

namespace microddp::kernels {

namespace {
// CUDA encodes versions as 1000 * major + 10 * minor; 0 means "no driver".
std::string version_string(int v) {
  if (v == 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

int cuda_device_count() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess) return count;
  // Clear the error so it does not surface at an unrelated later check.
  (void)cudaGetLastError();
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);  // 0 when no driver (libcuda) is installed
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaGetLastError();
  if (err == cudaErrorNoDevice) return 0;
  // No libcuda at all is a CPU machine; a driver that is present but older than the runtime is not.
  if (err == cudaErrorInsufficientDriver && driver == 0) return 0;
  std::ostringstream os;
  os << "CUDA cannot use this machine's GPUs: " << cudaGetErrorName(err) << ": " << cudaGetErrorString(err)
     << " (driver " << version_string(driver) << ", runtime " << version_string(runtime) << ")";
  if (err == cudaErrorInsufficientDriver) {
    os << "; install a driver that supports CUDA " << version_string(runtime) << " or newer";
  }
  os << "; --device cpu trains without the GPU";
  core::throw_error(os.str(), "cudaGetDeviceCount(&count)", __FILE__, __LINE__);
}

std::string cuda_device_description(int device) {
  const int count = cuda_device_count();
  MDDP_CHECK(device >= 0 && device < count, "CUDA device " << device << " requested, " << count << " visible");
  cudaDeviceProp prop{};
  MDDP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  MDDP_CUDA_CHECK(cudaDriverGetVersion(&driver));
  MDDP_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  std::ostringstream os;
  os << prop.name << " (cc " << prop.major << "." << prop.minor << ", " << prop.multiProcessorCount << " SMs, "
     << std::fixed << std::setprecision(1) << static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0)
     << " GiB, driver " << version_string(driver) << ", runtime " << version_string(runtime) << ")";
  return os.str();
}

DeviceUuid cuda_device_uuid(int device) {
  const int count = cuda_device_count();
  MDDP_CHECK(device >= 0 && device < count, "CUDA device " << device << " requested, " << count << " visible");
  cudaDeviceProp prop{};
  MDDP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceUuid uuid{};
  static_assert(sizeof(prop.uuid.bytes) == sizeof(DeviceUuid));
  std::memcpy(uuid.data(), prop.uuid.bytes, uuid.size());
  return uuid;
}

std::string format_device_uuid(const DeviceUuid& u) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return buf;
}

}  // namespace microddp::kernels
