// chrome_trace.hpp — Chrome trace events (chrome://tracing, https://ui.perfetto.dev) from the event
// log: the timeline of every rank, built from the same events as the step statistics.
//
// Layout: one process per rank ("rank r"), each with two threads (tracks):
//   compute  step > data / forward / backward (> per-layer events) / comm_wait / loss_sync /
//            optimizer, plus an instant per grad_ready
//   comm     one slice per gradient collective (parameter or bucket), from the moment it started
//            executing (its CollectiveExec event, measured where it ran; for events without one,
//            inferred: its launch or the previous collective's completion, the communication
//            thread runs them FIFO) to its completion, plus an instant at its launch; args carry
//            bytes, launch time and time queued.
//   queued   (async slices, cat "queued") launch -> start of execution of every collective that
//            waited behind others: drawn apart from execution, since many wait at once and so
//            cannot nest on one track.
// Timestamps are microseconds from the earliest event of the run. Steps are numbered as `train`
// prints them (1 = the first step; the event log's are 0-based).
//
// Clock alignment: gather_events() puts every rank through a barrier and then reads its clock;
// these post-barrier instants are taken to be simultaneous and each rank's events are shifted by
// (t_rank0 - t_rank). The error is the barrier's exit skew (microseconds on one node, tens of
// microseconds over TCP); steady clocks do not drift measurably over a run.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/event_log.hpp"

namespace microddp::perf {

struct RankEvents {
  int rank = 0;
  std::int64_t shift_ns = 0;  // added to this rank's timestamps to put them on rank 0's clock
  std::vector<core::Event> events;
};

// Collective over `comm`: every rank passes its events; rank 0 receives all ranks' events (other
// ranks get an empty vector). Counts may differ between ranks.
std::vector<RankEvents> gather_events(comm::Communicator& comm, const std::vector<core::Event>& events);

struct TraceLabels {
  std::function<std::string(int)> collective;  // collective event id -> name (parameter / bucket)
  std::function<std::string(int)> param;       // parameter index -> name (grad_ready instants)
};

// The trace object {"traceEvents":[...], "displayTimeUnit":"ms", "otherData":{...}}.
nlohmann::json chrome_trace(const std::vector<RankEvents>& ranks, const TraceLabels& labels,
                            const nlohmann::json& metadata = nlohmann::json::object());

// Writes `trace` to `path` (temporary file + rename). Throws core::UsageError if it cannot.
void write_json_file(const std::string& path, const nlohmann::json& trace);

}  // namespace microddp::perf
