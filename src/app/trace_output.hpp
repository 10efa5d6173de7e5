// trace_output.hpp — `--trace FILE.json` for commands that train: gathers every rank's events to
// rank 0 and writes the merged Chrome/Perfetto trace there (perf/chrome_trace.hpp).
// Collective: all ranks must call it at the same point.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"
#include "ddp/grad_sync.hpp"
#include "nlohmann/json.hpp"

namespace microddp::app {

void write_trace(const std::string& path, comm::Communicator& comm, const std::vector<core::Event>& events,
                 const ddp::GradSync& sync, const std::vector<model::ParamInfo>& params,
                 const nlohmann::json& metadata = nlohmann::json::object());

}  // namespace microddp::app
