// devices.hpp — the emulated node's GPUs as this process sees them, and each host thread's current
// device.
// Contract: CUDA_EMU_NODE_GPUS physical devices exist on the node; CUDA_VISIBLE_DEVICES picks which
// this process sees and in what order (visible index -> physical index), as the CUDA runtime does.
// runtime_status() is the error every device call returns when the runtime cannot start:
// CUDA_EMU_FAIL_INIT's error, else cudaErrorNoDevice when nothing is visible. A device's UUID is a
// hash of (host name, physical index): processes that share a physical device on one host agree on
// it, and different hosts (or UTS namespaces) give different UUIDs. Its PCI bus id is the physical
// index.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <string>
#include <string_view>

namespace cuda_emu {

// Stream priorities of every device (cudaDeviceGetStreamPriorityRange): 0 is the lowest, and lower
// is higher; an H100 reports -5 as the greatest.
inline constexpr int kLeastStreamPriority = 0;
inline constexpr int kGreatestStreamPriority = -5;

cudaError_t runtime_status();
int visible_device_count();       // 0 when runtime_status() fails
int physical_index(int visible);  // visible must be in [0, visible_device_count())
std::array<unsigned char, 16> uuid_for(std::string_view host, int physical);
std::array<unsigned char, 16> visible_device_uuid(int visible);
std::string host_name();

// The calling host thread's current device (cudaSetDevice / cudaGetDevice); 0 until set.
int current_device();
void set_current_device(int visible);

}  // namespace cuda_emu
