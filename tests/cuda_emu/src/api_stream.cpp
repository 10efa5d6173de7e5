// api_stream.cpp — the emulated CUDA runtime's streams, events and host functions:
// cudaStreamCreate(WithFlags|WithPriority), cudaStreamDestroy, cudaStreamSynchronize,
// cudaStreamQuery, cudaStreamWaitEvent, cudaEventCreate(WithFlags), cudaEventRecord,
// cudaEventQuery, cudaEventSynchronize, cudaEventElapsedTime, cudaEventDestroy, cudaLaunchHostFunc.
// Contract: as the CUDA runtime documents them, over streams.hpp's engine. An event records the
// completion of the operations queued before it on its stream; an event never recorded counts as
// complete; recording again moves it; a wait (cudaStreamWaitEvent) binds to the record current at
// the call. Stream priorities are accepted (and clamped) but do not change the order of work.
// Handles that are not live (destroyed, never created) are cudaErrorInvalidResourceHandle.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "api_call.hpp"
#include "counters.hpp"
#include "devices.hpp"
#include "streams.hpp"

// The runtime's opaque event type (driver_types.h: typedef struct CUevent_st* cudaEvent_t).
struct CUevent_st {
  int device = 0;
  unsigned flags = 0;
  cuda_emu::CompletionPtr recorded;  // the last record's marker; null = never recorded
};

namespace {

using cuda_emu::api_call;
using cuda_emu::Engine;
using cuda_emu::Needs;

std::mutex g_events_mutex;
std::vector<CUevent_st*> g_events;  // live events

bool live_event(cudaEvent_t e) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  return e != nullptr && std::find(g_events.begin(), g_events.end(), e) != g_events.end();
}

// The marker of an event's last record (null if never recorded); guarded like the list.
cuda_emu::CompletionPtr recorded(cudaEvent_t e) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  return e->recorded;
}

CUstream_st* resolve(cudaStream_t stream) { return Engine::get().resolve(stream, cuda_emu::current_device()); }

cudaError_t create_stream(cudaStream_t* out, unsigned flags, int priority) {
  if (out == nullptr) return cudaErrorInvalidValue;
  if (flags != cudaStreamDefault && flags != cudaStreamNonBlocking) return cudaErrorInvalidValue;
  priority = std::clamp(priority, cuda_emu::kGreatestStreamPriority, cuda_emu::kLeastStreamPriority);
  *out = Engine::get().create(cuda_emu::current_device(), flags == cudaStreamDefault, priority);
  return cudaSuccess;
}

}  // namespace

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
  return api_call("cudaStreamDestroy", Needs::Device, [&] { return Engine::get().destroy(stream); });
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return api_call("cudaStreamSynchronize", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    Engine& engine = Engine::get();
    engine.wait(engine.tail(s), "cudaStreamSynchronize");
    return cuda_emu::device_fault(s->device);
  });
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return api_call("cudaStreamQuery", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    Engine& engine = Engine::get();
    return engine.is_done(engine.tail(s)) ? cudaSuccess : cudaErrorNotReady;
  });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return api_call("cudaStreamWaitEvent", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr || !live_event(event)) return cudaErrorInvalidResourceHandle;
    if (flags != cudaEventWaitDefault) return cudaErrorInvalidValue;
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
  return api_call("cudaEventRecord", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr || !live_event(event)) return cudaErrorInvalidResourceHandle;
    if (s->device != event->device) return cudaErrorInvalidResourceHandle;  // event and stream of one device
    auto marker = Engine::get().enqueue(s, "cudaEventRecord", nullptr);
    const std::lock_guard<std::mutex> lock(g_events_mutex);
    event->recorded = std::move(marker);
    return cudaSuccess;
  });
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  return api_call("cudaEventQuery", Needs::Device, [&] {
    if (!live_event(event)) return cudaErrorInvalidResourceHandle;
    return Engine::get().is_done(recorded(event)) ? cudaSuccess : cudaErrorNotReady;
  });
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return api_call("cudaEventSynchronize", Needs::Device, [&] {
    if (!live_event(event)) return cudaErrorInvalidResourceHandle;
    Engine::get().wait(recorded(event), "cudaEventSynchronize");
    return cuda_emu::device_fault(event->device);
  });
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return api_call("cudaEventElapsedTime", Needs::Device, [&] {
    if (ms == nullptr) return cudaErrorInvalidValue;
    if (!live_event(start) || !live_event(end)) return cudaErrorInvalidResourceHandle;
    if (((start->flags | end->flags) & cudaEventDisableTiming) != 0) return cudaErrorInvalidResourceHandle;
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
    cuda_emu::counters::host_function();
    Engine::get().enqueue(s, "cudaLaunchHostFunc", [fn, user_data] { fn(user_data); });
    return cudaSuccess;
  });
}

}  // extern "C"
