// device_staging_none.cpp — make_device_staging() of builds without CUDA (see device_staging.hpp).
#include "comm/gpu/device_staging.hpp"
#include "core/error.hpp"

namespace microddp::comm {

namespace {
class NoDeviceStaging final : public DeviceStaging {
 public:
  void run(const CollectiveCall& call, int, int, const std::function<void(const CollectiveCall&)>&) override {
    MDDP_CHECK(false, collective_name(call.kind)
                          << " on a device buffer, but this build has no CUDA (MICRODDP_CUDA=OFF)");
  }
  std::string mode() const override { return "unavailable (built without CUDA)"; }
};
}  // namespace

std::unique_ptr<DeviceStaging> make_device_staging(StagingPolicy) { return std::make_unique<NoDeviceStaging>(); }

}  // namespace microddp::comm
