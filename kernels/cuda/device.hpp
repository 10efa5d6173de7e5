// device.hpp — which CUDA devices this process can see (only in builds with MICRODDP_CUDA=ON,
// from microddp_kernels_cuda). Plain C++: no CUDA headers needed to call these.
// Contract:
//   * cuda_device_count() is 0 exactly when this machine has no GPU for CUDA: the runtime reports
//     cudaErrorNoDevice, or no driver is installed at all (cudaErrorInsufficientDriver with driver
//     version 0: a CPU-only machine with a CUDA build). Every other failure — a driver older than the
//     runtime, a broken installation, a device in a bad state — throws core::Error naming the CUDA
//     error and the driver and runtime versions: a GPU machine must never silently train on the CPU
//     (or make gpu_check.sh say SKIPPED).
//   * cuda_device_description() and cuda_device_uuid() throw core::Error on a bad index.
#pragma once

#include <array>
#include <string>

namespace microddp::kernels {

int cuda_device_count();
// e.g. "NVIDIA H100 80GB HBM3 (cc 9.0, 132 SMs, 79.1 GiB, driver 13.0, runtime 13.0)"
std::string cuda_device_description(int device);

// The device's 16-byte UUID (cudaDeviceProp::uuid, what nvidia-smi -L prints): the identity of the
// physical GPU, the same in every process that sees it whatever CUDA_VISIBLE_DEVICES renumbering
// applies, so ranks can tell whether they share a GPU.
using DeviceUuid = std::array<unsigned char, 16>;
DeviceUuid cuda_device_uuid(int device);
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi formats it.
std::string format_device_uuid(const DeviceUuid& uuid);

}  // namespace microddp::kernels
