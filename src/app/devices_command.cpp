// devices_command.cpp — `microddp devices`: the GPUs this process can use, as the CUDA runtime sees
// them (CUDA_VISIBLE_DEVICES applied), the same query `train --device` makes. For people and for
// scripts (jobs/gpu_check.sh counts GPUs with it instead of nvidia-smi, which ignores
// CUDA_VISIBLE_DEVICES). Rank 0 prints; every rank queries, so a broken driver on any rank shows.
// Output: "# devices: N (<reason when 0>)", then "gpu I: <description> <uuid>" per GPU; with
// --count only N. Exit code 0; a driver that is present but unusable (e.g. older than the CUDA
// runtime) is an error (exit 1) naming both versions (kernels/cuda/device.hpp).
#include <cstdio>

#include "app/command.hpp"
#include "core/error.hpp"

#if MICRODDP_HAVE_CUDA
#include "kernels/cuda/device.hpp"
#endif

namespace microddp::app {

namespace {

class DevicesCommand final : public Command {
 public:
  explicit DevicesCommand(CLI::App* sub) {
    sub->add_flag("--count", count_only_, "Print only the number of visible GPUs");
  }
  int run(const comm::MpiRuntime& mpi) override {
#if MICRODDP_HAVE_CUDA
    const int n = kernels::cuda_device_count();
    const char* why_none = "no CUDA device visible (no GPU, no driver, or CUDA_VISIBLE_DEVICES hides them)";
#else
    const int n = 0;
    const char* why_none = "this microddp was built without CUDA (MICRODDP_CUDA=OFF)";
#endif
    if (mpi.rank() != 0) return 0;
    if (count_only_) {
      std::printf("%d\n", n);
      return 0;
    }
    std::printf("# devices: %d%s%s%s\n", n, n == 0 ? " (" : "", n == 0 ? why_none : "", n == 0 ? ")" : "");
#if MICRODDP_HAVE_CUDA
    for (int d = 0; d < n; ++d) {
      std::printf("gpu %d: %s %s\n", d, kernels::cuda_device_description(d).c_str(),
                  kernels::format_device_uuid(kernels::cuda_device_uuid(d)).c_str());
    }
#endif
    return 0;
  }

 private:
  bool count_only_ = false;
};

}  // namespace

std::unique_ptr<Command> register_devices(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("devices", "The GPUs this process can use (CUDA_VISIBLE_DEVICES applied)");
  return std::make_unique<DevicesCommand>(sub);
}

}  // namespace microddp::app
