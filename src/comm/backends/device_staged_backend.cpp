// device_staged_backend.cpp — device buffers of host-memory backends (see device_staged_backend.hpp).
#include "comm/backends/device_staged_backend.hpp"

namespace microddp::comm {

DeviceStagedBackend::DeviceStagedBackend(int rank, int size, StagingPolicy policy)
    : HostBackend(rank, size), staging_(make_device_staging(policy)) {}

void DeviceStagedBackend::execute(const CollectiveCall& call) {
  if (uses_device_buffers(call, rank())) {
    staging_->run(call, rank(), size(), [this](const CollectiveCall& c) { execute_host(c); });
    return;
  }
  execute_host(call);
}

}  // namespace microddp::comm
