// api_graph.cpp — the emulated CUDA runtime's stream capture and graph calls:
// cudaStreamBeginCapture, cudaStreamEndCapture, cudaStreamIsCapturing, cudaStreamGetCaptureInfo,
// cudaThreadExchangeStreamCaptureMode, cudaGraphInstantiate(WithFlags), cudaGraphLaunch,
// cudaGraphExecDestroy, cudaGraphDestroy, cudaGraphGetNodes, cudaGraphNodeGetType.
// Contract: as the CUDA runtime documents them, over graph.hpp (which says what a capture records,
// refuses and how a launch replays). Handles that are not live are cudaErrorInvalidValue for graphs
// (as documented) and cudaErrorInvalidResourceHandle for streams. Instantiation flags: automatic
// free on launch and node priorities are accepted (no graph here allocates; priorities never
// reorder work, but a graph captured from a prioritised stream and instantiated without
// cudaGraphInstantiateFlagUseNodePriority is counted: graph_priorities_dropped), device launch is not emulated (cudaErrorNotSupported), upload belongs to
// cudaGraphInstantiateWithParams (cudaErrorInvalidValue).
#include <cuda_runtime_api.h>

#include <cstdio>

#include "api_call.hpp"
#include "devices.hpp"
#include "graph.hpp"
#include "streams.hpp"

namespace {

using cuda_emu::api_call;
using cuda_emu::Captures;
using cuda_emu::Engine;
using cuda_emu::Needs;

CUstream_st* resolve(cudaStream_t stream) { return Engine::get().resolve(stream, cuda_emu::current_device()); }

cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  constexpr unsigned long long kAccepted =
      cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority;
  if ((flags & cudaGraphInstantiateFlagDeviceLaunch) != 0) {
    std::fprintf(stderr, "cuda_emu: cudaGraphInstantiate: device-launchable graphs are not emulated\n");
    return cudaErrorNotSupported;
  }
  if ((flags & ~kAccepted) != 0) return cudaErrorInvalidValue;
  return Captures::get().instantiate(graph, exec, (flags & cudaGraphInstantiateFlagUseNodePriority) != 0);
}

}  // namespace

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return api_call("cudaStreamBeginCapture", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    return Captures::get().begin(s, mode);
  });
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  return api_call("cudaStreamEndCapture", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    return Captures::get().end(s, pGraph);
  });
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* pCaptureStatus) {
  return api_call("cudaStreamIsCapturing", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    return Captures::get().info(s, pCaptureStatus, nullptr, nullptr, nullptr, nullptr, nullptr);
  });
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus* captureStatus_out,
                                     unsigned long long* id_out, cudaGraph_t* graph_out,
                                     const cudaGraphNode_t** dependencies_out, const cudaGraphEdgeData** edgeData_out,
                                     size_t* numDependencies_out) {
  return api_call("cudaStreamGetCaptureInfo", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    return Captures::get().info(s, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                                numDependencies_out);
  });
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  return api_call("cudaThreadExchangeStreamCaptureMode", Needs::Nothing, [&] {
    if (mode == nullptr) return cudaErrorInvalidValue;
    if (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
        *mode != cudaStreamCaptureModeRelaxed) {
      return cudaErrorInvalidValue;
    }
    Captures::exchange_mode(mode);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return api_call("cudaGraphInstantiate", Needs::Device, [&] { return instantiate(pGraphExec, graph, flags); });
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return api_call("cudaGraphInstantiateWithFlags", Needs::Device,
                  [&] { return instantiate(pGraphExec, graph, flags); });
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return api_call("cudaGraphLaunch", Needs::Device, [&] {
    CUstream_st* s = resolve(stream);
    if (s == nullptr) return cudaErrorInvalidResourceHandle;
    return Captures::get().launch(graphExec, s);
  });
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  return api_call("cudaGraphExecDestroy", Needs::Device, [&] { return Captures::get().destroy_exec(graphExec); });
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  return api_call("cudaGraphDestroy", Needs::Device, [&] { return Captures::get().destroy_graph(graph); });
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  return api_call("cudaGraphGetNodes", Needs::Device, [&] { return Captures::get().nodes(graph, nodes, numNodes); });
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* pType) {
  return api_call("cudaGraphNodeGetType", Needs::Device, [&] { return Captures::get().node_type(node, pType); });
}

}  // extern "C"
