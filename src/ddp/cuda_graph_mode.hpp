// cuda_graph_mode.hpp — `--cuda-graph auto|on|off`: whether a GPU run replays its steady-state step
// as one CUDA graph (ddp/step_graph.hpp says what is captured and when a run cannot be).
#pragma once

#include <string_view>

#include "core/enum_names.hpp"

namespace microddp::ddp {

enum class CudaGraphMode {
  Auto,  // a graph where the run is eligible, the eager step otherwise (the run header says why)
  On,    // a graph, or a usage error naming why the run cannot have one
  Off,   // the eager step: every call launched from the host (per-collective timing needs it)
};

inline constexpr auto kCudaGraphModeNames = core::enum_names<CudaGraphMode>(
    {{CudaGraphMode::Auto, "auto"}, {CudaGraphMode::On, "on"}, {CudaGraphMode::Off, "off"}});

inline std::string_view cuda_graph_mode_name(CudaGraphMode m) { return kCudaGraphModeNames.name(m); }
// "auto" | "on" | "off"; anything else is a core::UsageError.
inline CudaGraphMode parse_cuda_graph_mode(std::string_view name) {
  return kCudaGraphModeNames.parse(name, "--cuda-graph");
}

}  // namespace microddp::ddp
