// events.hpp — the emulated runtime's events (api_stream.cpp implements the API on them), shared
// with stream capture (graph.hpp), which records events into graphs and asks what they hold.
// Contract: an event holds the marker of its last record (null: never recorded; counts as
// complete) or, when that record was made in a capturing stream, the capture it belongs to and the
// captured nodes it stands for. A record outside a capture clears the captured state. Events are
// live from cudaEventCreate* to cudaEventDestroy; helpers here are thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "streams.hpp"

// The runtime's opaque event type (driver_types.h: typedef struct CUevent_st* cudaEvent_t).
struct CUevent_st {
  int device = 0;
  unsigned flags = 0;
  cuda_emu::CompletionPtr recorded;  // the last record's marker; null = never recorded (events mutex)
  // Guarded by the capture mutex (graph.hpp): set when the last record was made in a capture.
  std::shared_ptr<cuda_emu::Capture> captured_in;
  std::vector<CUgraphNode_st*> captured_nodes;  // what a stream that waits on it then depends on
};

namespace cuda_emu {

bool live_event(cudaEvent_t e);
// The marker of the event's last record (null if never recorded).
CompletionPtr event_marker(cudaEvent_t e);
// Makes `marker` the event's last record (a graph launch's external record node does, on the host).
void set_event_marker(cudaEvent_t e, CompletionPtr marker);

}  // namespace cuda_emu
