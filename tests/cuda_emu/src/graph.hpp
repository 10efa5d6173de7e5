// graph.hpp — stream capture and CUDA graphs on the emulated device (docs/cuda_emu.md, "Graphs").
// Contract, as the CUDA runtime documents stream capture (cudaStreamBeginCapture and friends):
//  * A capture sequence starts on a stream (not the legacy one) and records every operation issued
//    to it as a graph node instead of running it; a stream that waits on an event recorded inside
//    the sequence joins it (fork), and a captured event waited on by a capturing stream adds edges
//    (join). Nodes depend on what their stream depended on when they were issued; dependencies on
//    work from before the capture are dropped (a graph launch is ordered behind its stream instead).
//  * What a capture cannot hold is refused and invalidates the capture (every later operation on
//    its streams returns cudaErrorStreamCaptureInvalidated until cudaStreamEndCapture, which then
//    returns that error and no graph): host synchronisation with a capturing stream or the device
//    (cudaErrorStreamCaptureUnsupported), queries of captured events (cudaErrorCapturedEvent), the
//    legacy stream while a blocking stream captures (cudaErrorStreamCaptureImplicit), waits that
//    would cross the sequence's boundary (cudaErrorStreamCaptureIsolation) or merge two sequences
//    (cudaErrorStreamCaptureMerge), and the "potentially unsafe" calls (allocation, free,
//    synchronous copies) the capture modes prohibit (cudaErrorStreamCaptureUnsupported). Each
//    refusal prints one line naming the call and the reason.
//  * A graph launch is one operation of its stream, ordered behind the previous launch of the same
//    executable graph too. On the host, at the launch, every node is prepared in capture order
//    (NCCL operations take their turn in their communicator here; external event records and waits
//    bind to the event); on the worker, the nodes then run one at a time in a topological order
//    the schedule picks (CUDA_EMU_SCHEDULE: capture order, its reverse where the edges allow, or a
//    seeded shuffle of the ready nodes), so a missing edge between two branches shows. Nodes with
//    the same serial key (one NCCL communicator) run in capture order whatever the schedule.
//  * The capture mutex guards every capture, the capture fields of streams and events, and the
//    registry of graphs and executable graphs. Order: capture mutex, then the engine's or the
//    events' mutex, never the reverse.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config.hpp"
#include "counters.hpp"
#include "events.hpp"
#include "streams.hpp"

namespace cuda_emu {

// What a node does (for the counters and cudaGraphNodeGetType; cuBLAS and NCCL run kernels on a GPU).
enum class NodeWork { Kernel, Gemm, Collective, Memcpy, Memset, HostFunction, EventRecord, EventWait, ChildGraph };

using NodeRun = std::function<void()>;         // one launch's work of a node, on the launch stream's worker
using NodePrepare = std::function<NodeRun()>;  // on the host, at every launch, in capture order

struct GraphSpec;

// One stream operation as a graph holds it.
struct NodeSpec {
  NodeWork work = NodeWork::Kernel;
  std::string what;  // diagnostics, as the stream operation would be named
  NodePrepare prepare;
  const void* serial = nullptr;                          // non-null: runs after the earlier nodes with the same key
  counters::Copy copy = counters::Copy::DeviceToDevice;  // Memcpy
  std::size_t bytes = 0;                                 // Memcpy, Memset: counted per launch
  std::shared_ptr<const GraphSpec> child;                // ChildGraph
  int priority = 0;  // the capturing stream's priority: kept only with cudaGraphInstantiateFlagUseNodePriority
};

// An executable graph: nodes in capture order (a topological order); deps[i] holds indices < i,
// including the serial edges.
struct GraphSpec {
  int device = 0;
  std::vector<NodeSpec> nodes;
  std::vector<std::vector<std::size_t>> deps;
};

// One capture sequence.
struct Capture {
  unsigned long long id = 0;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;  // the thread that began it
  int device = 0;
  CUstream_st* origin = nullptr;
  std::vector<CUstream_st*> streams;  // origin first, then the streams that joined
  std::unique_ptr<CUgraph_st> graph;
  cudaError_t invalidated = cudaSuccess;  // the refusal that invalidated it
  bool ended = false;
};

// Prepares every node of `spec` (on the host, capture order, with the capture mutex held), counting
// the launch's nodes, copies and memsets; returns the work a stream worker then runs (run_plan).
struct LaunchPlan;
std::shared_ptr<const LaunchPlan> prepare_plan(const std::shared_ptr<const GraphSpec>& spec);
void run_plan(const LaunchPlan& plan);
// Completes the external event records of a plan that did not run (a faulted device).
void finish_plan(const LaunchPlan& plan);

// Memory a graph node reads or writes must still be allocated when the graph launches (a freed
// buffer is what a GPU reports as an illegal address): false, and a device fault naming `what`, if
// [p, p + bytes) is not in a live allocation any more. Null or empty ranges pass.
bool still_allocated(int device, const void* p, std::size_t bytes, const std::string& what);

class Captures {
 public:
  static Captures& get();

  // ---- stream operations ----
  // Whether an operation issued now on `s` is recorded (*capturing) or queued. Errors (nothing may
  // be issued): the stream's capture was invalidated (cudaErrorStreamCaptureInvalidated); `s` is
  // the legacy stream while a blocking stream of its device captures (those captures are
  // invalidated: cudaErrorStreamCaptureImplicit).
  cudaError_t issue_check(CUstream_st* s, bool* capturing, const char* api);
  // Records `node` on capturing stream `s`: it depends on the stream's dependencies and becomes
  // the stream's only one. The errors of issue_check; cudaErrorIllegalState if `s` stopped capturing.
  cudaError_t record(CUstream_st* s, NodeSpec node);
  // One node on several streams at once (an NCCL group): after all their dependencies, and all of
  // them then depend on it. *recorded = false when none of them captures (the caller queues the
  // work); a mix of capturing and other streams, or two sequences, is cudaErrorStreamCaptureIsolation.
  cudaError_t record_joined(const std::vector<CUstream_st*>& streams, NodeSpec node, bool* recorded);
  // `api` did something the capture of `s` cannot hold (`why`): invalidates it, prints, returns `error`.
  cudaError_t refuse(CUstream_st* s, cudaError_t error, const char* api, const std::string& why);

  // ---- host synchronisation and the capture modes ----
  // A host wait for, or query of, stream `s`: refused while it captures (cudaErrorStreamCapture-
  // Unsupported, or ...Invalidated once invalidated); the legacy stream while a blocking stream of
  // its device captures is cudaErrorStreamCaptureImplicit.
  cudaError_t check_stream_wait(CUstream_st* s, const char* api);
  // A wait for the whole device (cudaDeviceSynchronize, cublasDestroy): refused while any stream of
  // it captures; every such capture is invalidated.
  cudaError_t check_device_wait(int device, const char* api);
  // A "potentially unsafe" call (cudaThreadExchangeStreamCaptureMode's rules, with the calling
  // thread's mode): refused with cudaErrorStreamCaptureUnsupported when a capture prohibits it,
  // and the prohibiting captures are invalidated.
  cudaError_t check_unsafe(const char* api);
  static void exchange_mode(cudaStreamCaptureMode* mode);

  // ---- events ----
  // cudaEventRecord(WithFlags): in a capturing stream the event becomes captured (and, with
  // cudaEventRecordExternal, a record node); elsewhere *queue = true and the captured state is
  // cleared (the caller queues the marker).
  cudaError_t record_event(cudaEvent_t e, CUstream_st* s, unsigned flags, bool* queue);
  // cudaStreamWaitEvent: joins, forks or, with cudaEventWaitExternal, records a wait node; *queue =
  // true when neither the stream nor the event is part of a capture (a plain wait).
  cudaError_t wait_event(CUstream_st* s, cudaEvent_t e, unsigned flags, bool* queue);
  // cudaEventQuery / Synchronize / ElapsedTime on an event last recorded in a capture:
  // cudaErrorCapturedEvent (its capture, if still open, is invalidated).
  cudaError_t check_event(cudaEvent_t e, const char* api);

  // ---- the capture state machine ----
  cudaError_t begin(CUstream_st* s, cudaStreamCaptureMode mode);
  cudaError_t end(CUstream_st* s, cudaGraph_t* graph);
  // cudaStreamIsCapturing / cudaStreamGetCaptureInfo (outputs other than the status: optional).
  cudaError_t info(CUstream_st* s, cudaStreamCaptureStatus* status, unsigned long long* id, cudaGraph_t* graph,
                   const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges, std::size_t* count);
  bool in_capture(CUstream_st* s);

  // ---- graphs and executable graphs ----
  // A graph that is still being captured into is not destroyable (cudaErrorIllegalState).
  cudaError_t destroy_graph(cudaGraph_t g);
  // A snapshot of the graph (also of one still being captured into, as CUDA allows).
  // use_node_priority: cudaGraphInstantiateFlagUseNodePriority given (without it, a graph whose nodes
  // came from streams of non-default priority loses them: counted, priorities never reorder work here).
  cudaError_t instantiate(cudaGraph_t g, cudaGraphExec_t* exec, bool use_node_priority);
  cudaError_t destroy_exec(cudaGraphExec_t exec);
  // cudaGraphLaunch: prepares the nodes and queues the launch on `s` behind the previous launch of
  // `exec`; into a capturing stream, records a child graph node instead.
  cudaError_t launch(cudaGraphExec_t exec, CUstream_st* s);
  // cudaGraphGetNodes: the nodes in capture order.
  cudaError_t nodes(cudaGraph_t g, cudaGraphNode_t* out, std::size_t* count);
  // cudaGraphNodeGetType of a node of a live graph.
  cudaError_t node_type(cudaGraphNode_t node, cudaGraphNodeType* type);

 private:
  Captures() = default;
  cudaError_t check_implicit_locked(CUstream_st* s, const char* api);
  cudaError_t record_locked(CUstream_st* s, NodeSpec node);
  void end_locked(Capture& c);
  bool live_graph_locked(cudaGraph_t g) const;

  std::mutex m_;
  std::vector<std::shared_ptr<Capture>> open_;  // begun, not ended
  unsigned long long next_id_ = 1;
  std::vector<CUgraph_st*> graphs_;     // handles EndCapture returned and not destroyed
  std::vector<CUgraphExec_st*> execs_;  // instantiated and not destroyed
};

}  // namespace cuda_emu

// The runtime's opaque graph types (driver_types.h).
struct CUgraphNode_st {
  cuda_emu::NodeSpec spec;
  std::vector<CUgraphNode_st*> deps;
  std::size_t index = 0;  // position in capture order
};

struct CUgraph_st {
  int device = 0;
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // capture order
  // cudaStreamGetCaptureInfo's arrays, valid until the next call on the stream.
  std::vector<cudaGraphNode_t> info_deps;
  std::vector<cudaGraphEdgeData> info_edges;
};

struct CUgraphExec_st {
  std::shared_ptr<const cuda_emu::GraphSpec> spec;
  cuda_emu::CompletionPtr last;  // the previous launch's completion
};
