// trace_output.cpp — gather, label and write the trace.
#include "app/trace_output.hpp"

#include "perf/chrome_trace.hpp"

namespace microddp::app {

void write_trace(const std::string& path, comm::Communicator& comm, const std::vector<core::Event>& events,
                 const ddp::GradSync& sync, const std::vector<model::ParamInfo>& params,
                 const nlohmann::json& metadata) {
  const auto ranks = perf::gather_events(comm, events);
  if (comm.rank() != 0) return;
  perf::TraceLabels labels;
  labels.collective = [&sync](int id) { return sync.collective_label(id); };
  labels.param = [&params](int id) {
    return id >= 0 && static_cast<std::size_t>(id) < params.size() ? params[static_cast<std::size_t>(id)].name
                                                                   : std::to_string(id);
  };
  nlohmann::json meta = metadata;
  meta["strategy"] = std::string(sync.name());
  meta["ranks"] = comm.size();
  perf::write_json_file(path, perf::chrome_trace(ranks, labels, meta));
}

}  // namespace microddp::app
