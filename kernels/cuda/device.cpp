// device.cpp — CUDA device discovery (see device.hpp for the contract).
#include "kernels/cuda/device.hpp"

#include <cuda_runtime.h>

#include <iomanip>
#include <sstream>

#include "kernels/cuda/cuda_check.hpp"

namespace microddp::kernels {

int cuda_device_count() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // cudaErrorNoDevice / cudaErrorInsufficientDriver (no libcuda) etc.: "no GPU here", not a failure.
    (void)cudaGetLastError();  // clear the error so it does not surface at an unrelated later check
    return 0;
  }
  return count;
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
  // Versions are encoded as 1000 * major + 10 * minor.
  os << prop.name << " (cc " << prop.major << "." << prop.minor << ", " << prop.multiProcessorCount << " SMs, "
     << std::fixed << std::setprecision(1) << static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0)
     << " GiB, driver " << driver / 1000 << "." << (driver % 1000) / 10 << ", runtime " << runtime / 1000 << "."
     << (runtime % 1000) / 10 << ")";
  return os.str();
}

}  // namespace microddp::kernels
