// device.hpp — which CUDA devices this process can see (only in builds with MICRODDP_CUDA=ON,
// from microddp_kernels_cuda). Plain C++: no CUDA headers needed to call these.
// Contract: cuda_device_count() never throws; no driver, no device, or a broken installation all
// mean 0 (GPU tests use this to skip). cuda_device_description() throws core::Error on a bad index.
#pragma once

#include <string>

namespace microddp::kernels {

int cuda_device_count();
// e.g. "NVIDIA H100 80GB HBM3 (cc 9.0, 132 SMs, 79.1 GiB, driver 13.0, runtime 13.0)"
std::string cuda_device_description(int device);

}  // namespace microddp::kernels
