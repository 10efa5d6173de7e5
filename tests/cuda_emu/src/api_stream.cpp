// api_stream.cpp — the emulated CUDA runtime's streams, events and host functions:
// cudaStreamCreate(WithFlags|WithPriority), cudaStreamDestroy, cudaStreamSynchronize,
// cudaStreamQuery, cudaStreamWaitEvent, cudaEventCreate(WithFlags), cudaEventRecord(WithFlags),
// cudaEventQuery, cudaEventSynchronize, cudaEventElapsedTime, cudaEventDestroy, cudaLaunchHostFunc.
// Contract: as the CUDA runtime documents them, over streams.hpp's engine. An event records the
// completion of the operations queued before it on its stream; an event never recorded counts as
// complete; recording again moves it; a wait (cudaStreamWaitEvent) binds to the record current at
// the call. Stream priorities are accepted (and clamped) but do not change the order of work.
// Handles that are not live (destroyed, never created) are cudaErrorInvalidResourceHandle.
// Stream capture (graph.hpp): operations on a capturing stream are recorded, and what a capture
// cannot hold (waiting for or querying a capturing stream or a captured event, destroying a
// capturing stream) is refused and invalidates the capture.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "api_call.hpp"
#include "counters.hpp"
#include "devices.hpp"
#include "events.hpp"
#include "graph.hpp"
#include "streams.hpp"

namespace {

using cuda_emu::api_call;
using cuda_emu::Captures;
using cuda_emu::Engine;
using cuda_emu::live_event;
using cuda_emu::Needs;

std::mutex g_events_mutex;
std::vector<CUevent_st*> g_events;  // live events

cuda_emu::CompletionPtr recorded(cudaEvent_t e) { return cuda_emu::event_marker(e); }

CUstream_st* resolve(cudaStream_t stream) { return Engine::get().resolve(stream, cuda_emu::current_device()); }

cudaError_t record_event(cudaEvent_t event, cudaStream_t stream, unsigned flags) {
  CUstream_st* s = resolve(stream);
  if (s == nullptr || !live_event(event)) return cudaErrorInvalidResourceHandle;
  if (s->device != event->device) return cudaErrorInvalidResourceHandle;  // event and stream of one device
  if ((flags & ~unsigned{cudaEventRecordExternal}) != 0) return cudaErrorInvalidValue;
  bool queue = false;
  if (const cudaError_t e = Captures::get().record_event(event, s, flags, &queue); e != cudaSuccess || !queue) return e;
  auto marker = Engine::get().enqueue(s, "cudaEventRecord", nullptr);
  cuda_emu::set_event_marker(event, std::move(marker));
  return cudaSuccess;
}

cudaError_t create_stream(cudaStream_t* out, unsigned flags, int priority) {
  if (out == nullptr) return cudaErrorInvalidValue;
  if (flags != cudaStreamDefault && flags != cudaStreamNonBlocking) return cudaErrorInvalidValue;
  priority = std::clamp(priority, cuda_emu::kGreatestStreamPriority, cuda_emu::kLeastStreamPriority);
  *out = Engine::get().create(cuda_emu::current_device(), flags == cudaStreamDefault, priority);
  return cudaSuccess;
}

}  // namespace

namespace cuda_emu {

bool live_event(cudaEvent_t e) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  return e != nullptr && std::find(g_events.begin(), g_events.end(), e) != g_events.end();
}

CompletionPtr event_marker(cudaEvent_t e) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  return e->recorded;
}

void set_event_marker(cudaEvent_t e, CompletionPtr marker) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  e->recorded = std::move(marker);
}

}  // namespace cuda_emu

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return api_call("cudaStreamCreate", Needs::Device, [&] { return create_stream(stream, cudaStreamDefault, 0); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return api_call("cudaStreamCreateWithFlags", Needs::Device, [&] { return create_stream(stream, flags, 0); });
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  return api_call("cudaStreamCreateWithPriority", Needs::Device,
                  [&] { return create_stream(stream, flags, priority); });
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return api_call("cudaStreamDestroy", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s != nullptr && !s->legacy && Captures::get().in_capture(s)) {
      // Undefined in CUDA's documentation; refused here so a capture never loses a stream.
      return Captures::get().refuse(s, cudaErrorStreamCaptureUnsupported, "cudaStreamDestroy",
                                    "destroys a stream that is part of a capture");
    }
    return Engine::get().destroy(stream);
  });
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return api_call("cudaStreamSynchronize", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    if (const cudaError_t e = Captures::get().check_stream_wait(s, "cudaStreamSynchronize"); e != cudaSuccess) return e;
    Engine& engine = Engine::get();
    engine.wait(engine.tail(s), "cudaStreamSynchronize");
    return cuda_emu::device_fault(s->device);
  });
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return api_call("cudaStreamQuery", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    if (const cudaError_t e = Captures::get().check_stream_wait(s, "cudaStreamQuery"); e != cudaSuccess) return e;
    Engine& engine = Engine::get();
    return engine.is_done(engine.tail(s)) ? cudaSuccess : cudaErrorNotReady;
  });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return api_call("cudaStreamWaitEvent", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr || !live_event(event)) return cudaErrorInvalidResourceHandle;
    if ((flags & ~unsigned{cudaEventWaitExternal}) != 0) return cudaErrorInvalidValue;
    bool queue = false;
    if (const cudaError_t e = Captures::get().wait_event(s, event, flags, &queue); e != cudaSuccess || !queue) return e;
    std::vector<cuda_emu::CompletionPtr> deps;
    if (auto r = recorded(event)) deps.push_back(std::move(r));
    Engine::get().enqueue(s, "cudaStreamWaitEvent", nullptr, std::move(deps));
    cuda_emu::counters::stream_event_wait();
    return cudaSuccess;
  });
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return api_call("cudaEventCreate", Needs::Device, [&] { return cudaEventCreateWithFlags(event, cudaEventDefault); });
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return api_call("cudaEventCreateWithFlags", Needs::Device, [&] {
    if (event == nullptr) return cudaErrorInvalidValue;
    // Blocking sync only changes how the host waits; interprocess needs DisableTiming (documented).
    const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
    if ((flags & ~known) != 0) return cudaErrorInvalidValue;
    if ((flags & cudaEventInterprocess) != 0 && (flags & cudaEventDisableTiming) == 0) return cudaErrorInvalidValue;
    auto* e = new CUevent_st();
    e->device = cuda_emu::current_device();
    e->flags = flags;
    const std::lock_guard<std::mutex> lock(g_events_mutex);
    g_events.push_back(e);
    *event = e;
    return cudaSuccess;
  });
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return api_call("cudaEventRecord", Needs::Device,
                  [&] { return record_event(event, stream, cudaEventRecordDefault); });
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return api_call("cudaEventRecordWithFlags", Needs::Device, [&] { return record_event(event, stream, flags); });
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  return api_call("cudaEventQuery", Needs::Device, [&] {
    if (!live_event(event)) return cudaErrorInvalidResourceHandle;
    if (const cudaError_t e = Captures::get().check_event(event, "cudaEventQuery"); e != cudaSuccess) return e;
    return Engine::get().is_done(recorded(event)) ? cudaSuccess : cudaErrorNotReady;
  });
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return api_call("cudaEventSynchronize", Needs::Device, [&] {
    if (!live_event(event)) return cudaErrorInvalidResourceHandle;
    if (const cudaError_t e = Captures::get().check_event(event, "cudaEventSynchronize"); e != cudaSuccess) return e;
    Engine::get().wait(recorded(event), "cudaEventSynchronize");
    return cuda_emu::device_fault(event->device);
  });
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return api_call("cudaEventElapsedTime", Needs::Device, [&] {
    if (ms == nullptr) return cudaErrorInvalidValue;
    if (!live_event(start) || !live_event(end)) return cudaErrorInvalidResourceHandle;
    if (((start->flags | end->flags) & cudaEventDisableTiming) != 0) return cudaErrorInvalidResourceHandle;
    for (cudaEvent_t e : {start, end}) {
      if (const cudaError_t err = Captures::get().check_event(e, "cudaEventElapsedTime"); err != cudaSuccess)
        return err;
    }
    const auto a = recorded(start), b = recorded(end);
    if (a == nullptr || b == nullptr) return cudaErrorInvalidResourceHandle;
    Engine& engine = Engine::get();
    if (!engine.is_done(a) || !engine.is_done(b)) return cudaErrorNotReady;
    *ms = static_cast<float>(static_cast<double>(engine.done_ns(b) - engine.done_ns(a)) * 1e-6);
    return cudaSuccess;
  });
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return api_call("cudaEventDestroy", Needs::Device, [&] {
    const std::lock_guard<std::mutex> lock(g_events_mutex);
    const auto it = std::find(g_events.begin(), g_events.end(), event);
    if (event == nullptr || it == g_events.end()) return cudaErrorInvalidResourceHandle;
    g_events.erase(it);
    delete event;  // the marker lives on in the stream (and in waits bound to it) until done
    return cudaSuccess;
  });
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  return api_call("cudaLaunchHostFunc", Needs::Device, [&] {
    if (fn == nullptr) return cudaErrorInvalidValue;
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    bool capturing = false;
    if (const cudaError_t e = Captures::get().issue_check(s, &capturing, "cudaLaunchHostFunc"); e != cudaSuccess) {
      return e;
    }
    if (capturing) {
      cuda_emu::NodeSpec node;
      node.work = cuda_emu::NodeWork::HostFunction;
      node.what = "cudaLaunchHostFunc";
      node.prepare = [fn, user_data]() -> cuda_emu::NodeRun { return [fn, user_data] { fn(user_data); }; };
      return Captures::get().record(s, std::move(node));
    }
    cuda_emu::counters::host_function();
    Engine::get().enqueue(s, "cudaLaunchHostFunc", [fn, user_data] { fn(user_data); });
    return cudaSuccess;
  });
}

}  // extern "C"
