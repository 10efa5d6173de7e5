// graph.cpp — stream capture, graph instantiation and graph launches (see graph.hpp).
#include "graph.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <iterator>
#include <utility>

#include "errors.hpp"
#include "memory.hpp"
#include "thread_order.hpp"

namespace cuda_emu {

// The work of one launch: every node prepared, plus what must happen even if it stops early.
struct LaunchPlan {
  std::shared_ptr<const GraphSpec> spec;
  std::vector<NodeRun> runs;       // by node index
  std::vector<NodeRun> on_finish;  // idempotent: external event records, child graphs' own
  Schedule schedule = Schedule::Forward;
  std::uint64_t seed = 0;
  std::uint64_t salt = 0;  // one per prepared launch: a new shuffle every launch
};

namespace {

thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;
std::atomic<std::uint64_t> g_launch_salt{0};

void say(const char* api, const std::string& why, cudaError_t error) {
  std::fprintf(stderr, "cuda_emu: %s: %s (%s)\n", api, why.c_str(), error_name(error));
}

// The first refusal is the reason a capture reports.
void invalidate(Capture& c, cudaError_t why) {
  if (c.invalidated == cudaSuccess) c.invalidated = why;
}

// Invalidates every open capture that `holds_back` picks; if there is one, prints why and returns
// `error` (else cudaSuccess).
template <typename Pred>
cudaError_t refuse_captures(const std::vector<std::shared_ptr<Capture>>& open, Pred holds_back, cudaError_t error,
                            const char* api, const char* why) {
  bool found = false;
  for (const auto& c : open) {
    if (!holds_back(*c)) continue;
    invalidate(*c, error);
    found = true;
  }
  if (!found) return cudaSuccess;
  say(api, why, error);
  return error;
}

bool contains(const std::vector<CUgraphNode_st*>& v, const CUgraphNode_st* n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

void add_unique(std::vector<CUgraphNode_st*>& to, const std::vector<CUgraphNode_st*>& from) {
  for (CUgraphNode_st* n : from) {
    if (!contains(to, n)) to.push_back(n);
  }
}

// Every node `from` depends on, directly or not, and `from` itself.
std::vector<const CUgraphNode_st*> ancestors(const std::vector<CUgraphNode_st*>& from, std::size_t node_count) {
  std::vector<bool> seen(node_count, false);
  std::vector<const CUgraphNode_st*> out, todo(from.begin(), from.end());
  while (!todo.empty()) {
    const CUgraphNode_st* n = todo.back();
    todo.pop_back();
    if (seen[n->index]) continue;
    seen[n->index] = true;
    out.push_back(n);
    todo.insert(todo.end(), n->deps.begin(), n->deps.end());
  }
  return out;
}

}  // namespace

// ---- plans --------------------------------------------------------------------------------------

bool still_allocated(int device, const void* p, std::size_t bytes, const std::string& what) {
  if (p == nullptr || bytes == 0) return true;
  bool overrun = false;
  const PointerInfo info = Memory::get().lookup_range(p, bytes, &overrun);
  if (info.kind != MemoryKind::Unregistered && !overrun) return true;
  raise_fault(device, cudaErrorIllegalAddress,
              "graph launch: " + what + " uses memory that is no longer allocated (freed after the capture?)");
  return false;
}

std::shared_ptr<const LaunchPlan> prepare_plan(const std::shared_ptr<const GraphSpec>& spec) {
  auto plan = std::make_shared<LaunchPlan>();
  plan->spec = spec;
  plan->runs.resize(spec->nodes.size());
  for (std::size_t i = 0; i < spec->nodes.size(); ++i) {
    const NodeSpec& node = spec->nodes[i];
    if (node.work == NodeWork::ChildGraph) {
      auto child = prepare_plan(node.child);
      plan->runs[i] = [child] { run_plan(*child); };
      plan->on_finish.push_back([child] { finish_plan(*child); });
      continue;
    }
    counters::replayed_node(node.work == NodeWork::Kernel ? counters::Replayed::Kernel
                            : node.work == NodeWork::Gemm ? counters::Replayed::Gemm
                                                          : counters::Replayed::Other);
    if (node.work == NodeWork::Memcpy) counters::copy(node.copy, node.bytes);
    if (node.work == NodeWork::Memset) counters::memset(node.bytes);
    if (node.prepare) plan->runs[i] = node.prepare();
    if (node.work == NodeWork::EventRecord && plan->runs[i]) plan->on_finish.push_back(plan->runs[i]);
  }
  const Tuning& t = tuning();
  plan->schedule = t.schedule.load();
  plan->seed = t.seed.load();
  plan->salt = ++g_launch_salt;
  return plan;
}

void run_plan(const LaunchPlan& plan) {
  const GraphSpec& g = *plan.spec;
  const std::size_t n = g.nodes.size();
  std::vector<std::size_t> waiting(n);
  std::vector<std::vector<std::size_t>> dependents(n);
  std::vector<std::size_t> ready;  // sorted by index (capture order)
  for (std::size_t i = 0; i < n; ++i) {
    waiting[i] = g.deps[i].size();
    for (std::size_t d : g.deps[i]) dependents[d].push_back(i);
    if (waiting[i] == 0) ready.push_back(i);
  }
  for (std::uint64_t step = 0; !ready.empty(); ++step) {
    std::size_t pick = 0;
    if (plan.schedule == Schedule::Reverse) pick = ready.size() - 1;
    if (plan.schedule == Schedule::Shuffle) pick = mix(plan.seed ^ plan.salt, step) % ready.size();
    const std::size_t i = ready[pick];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    if (device_fault(g.device) != cudaSuccess) break;  // as a faulted context runs nothing more
    try {
      if (plan.runs[i]) plan.runs[i]();
    } catch (const std::exception& e) {
      raise_fault(g.device, cudaErrorLaunchFailure, "graph node " + g.nodes[i].what + ": " + e.what());
      break;
    } catch (...) {
      raise_fault(g.device, cudaErrorLaunchFailure, "graph node " + g.nodes[i].what + ": unknown exception");
      break;
    }
    for (std::size_t j : dependents[i]) {
      if (--waiting[j] == 0) ready.insert(std::upper_bound(ready.begin(), ready.end(), j), j);
    }
  }
  finish_plan(plan);
}

void finish_plan(const LaunchPlan& plan) {
  for (const NodeRun& f : plan.on_finish) f();
}

// ---- Captures -----------------------------------------------------------------------------------

Captures& Captures::get() {
  static Captures* c = new Captures();  // never destroyed, as the engine
  return *c;
}

void Captures::exchange_mode(cudaStreamCaptureMode* mode) { std::swap(*mode, t_mode); }

cudaError_t Captures::check_implicit_locked(CUstream_st* s, const char* api) {
  if (!s->legacy) return cudaSuccess;
  return refuse_captures(
      open_,
      [s](const Capture& c) {
        return c.device == s->device &&
               std::any_of(c.streams.begin(), c.streams.end(), [](const CUstream_st* t) { return t->blocking; });
      },
      cudaErrorStreamCaptureImplicit, api,
      "uses the legacy default stream while a blocking stream of its device captures");
}

cudaError_t Captures::issue_check(CUstream_st* s, bool* capturing, const char* api) {
  const std::lock_guard<std::mutex> lock(m_);
  *capturing = s->capture != nullptr;
  if (*capturing) return s->capture->invalidated != cudaSuccess ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
  return check_implicit_locked(s, api);
}

cudaError_t Captures::record_locked(CUstream_st* s, NodeSpec node) {
  if (s->capture == nullptr) return cudaErrorIllegalState;
  Capture& c = *s->capture;
  if (c.invalidated != cudaSuccess) return cudaErrorStreamCaptureInvalidated;
  auto n = std::make_unique<CUgraphNode_st>();
  n->spec = std::move(node);
  n->spec.priority = s->priority;
  n->deps = s->capture_deps;
  n->index = c.graph->nodes.size();
  s->capture_deps = {n.get()};
  c.graph->nodes.push_back(std::move(n));
  counters::captured_operation();
  return cudaSuccess;
}

cudaError_t Captures::record(CUstream_st* s, NodeSpec node) {
  const std::lock_guard<std::mutex> lock(m_);
  return record_locked(s, std::move(node));
}

cudaError_t Captures::record_joined(const std::vector<CUstream_st*>& streams, NodeSpec node, bool* recorded) {
  const std::lock_guard<std::mutex> lock(m_);
  *recorded = false;
  std::shared_ptr<Capture> c;
  bool some_plain = false;
  for (CUstream_st* s : streams) {
    if (s->capture == nullptr) {
      some_plain = true;
    } else if (c == nullptr) {
      c = s->capture;
    } else if (c != s->capture) {
      invalidate(*c, cudaErrorStreamCaptureIsolation);
      invalidate(*s->capture, cudaErrorStreamCaptureIsolation);
      say(node.what.c_str(), "one operation on streams of two capture sequences", cudaErrorStreamCaptureIsolation);
      return cudaErrorStreamCaptureIsolation;
    }
  }
  if (c == nullptr) {
    for (CUstream_st* s : streams) {
      if (const cudaError_t e = check_implicit_locked(s, node.what.c_str()); e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
  if (c->invalidated != cudaSuccess) return cudaErrorStreamCaptureInvalidated;
  if (some_plain) {
    invalidate(*c, cudaErrorStreamCaptureIsolation);
    say(node.what.c_str(), "one operation on a capturing and a non-capturing stream", cudaErrorStreamCaptureIsolation);
    return cudaErrorStreamCaptureIsolation;
  }
  std::vector<CUgraphNode_st*> deps;
  for (CUstream_st* s : streams) add_unique(deps, s->capture_deps);
  streams.front()->capture_deps = std::move(deps);
  if (const cudaError_t e = record_locked(streams.front(), std::move(node)); e != cudaSuccess) return e;
  for (CUstream_st* s : streams) s->capture_deps = streams.front()->capture_deps;
  *recorded = true;
  return cudaSuccess;
}

cudaError_t Captures::refuse(CUstream_st* s, cudaError_t error, const char* api, const std::string& why) {
  const std::lock_guard<std::mutex> lock(m_);
  if (s->capture != nullptr) invalidate(*s->capture, error);
  say(api, why, error);
  return error;
}

cudaError_t Captures::check_stream_wait(CUstream_st* s, const char* api) {
  const std::lock_guard<std::mutex> lock(m_);
  if (s->capture != nullptr) {
    if (s->capture->invalidated != cudaSuccess) return cudaErrorStreamCaptureInvalidated;
    invalidate(*s->capture, cudaErrorStreamCaptureUnsupported);
    say(api, "waits for or queries a stream that is capturing", cudaErrorStreamCaptureUnsupported);
    return cudaErrorStreamCaptureUnsupported;
  }
  return check_implicit_locked(s, api);
}

cudaError_t Captures::check_device_wait(int device, const char* api) {
  const std::lock_guard<std::mutex> lock(m_);
  return refuse_captures(
      open_, [device](const Capture& c) { return c.device == device; }, cudaErrorStreamCaptureUnsupported, api,
      "waits for the whole device while one of its streams captures");
}

cudaError_t Captures::check_unsafe(const char* api) {
  const std::lock_guard<std::mutex> lock(m_);
  const std::thread::id me = std::this_thread::get_id();
  // cudaThreadExchangeStreamCaptureMode: a thread in Global mode is held back by its own non-relaxed
  // captures and by other threads' Global ones; in ThreadLocal mode by its own non-relaxed captures
  // only; in Relaxed mode by none.
  const auto holds_back = [me](const Capture& c) {
    const bool own = c.thread == me && c.mode != cudaStreamCaptureModeRelaxed;
    const bool other = c.thread != me && c.mode == cudaStreamCaptureModeGlobal;
    return (t_mode != cudaStreamCaptureModeRelaxed && own) || (t_mode == cudaStreamCaptureModeGlobal && other);
  };
  return refuse_captures(
      open_, holds_back, cudaErrorStreamCaptureUnsupported, api,
      "a potentially unsafe call while a capture sequence prohibits it (see cudaThreadExchangeStreamCaptureMode)");
}

cudaError_t Captures::record_event(cudaEvent_t e, CUstream_st* s, unsigned flags, bool* queue) {
  const std::lock_guard<std::mutex> lock(m_);
  *queue = false;
  if (s->capture == nullptr) {
    if (const cudaError_t err = check_implicit_locked(s, "cudaEventRecord"); err != cudaSuccess) return err;
    e->captured_in.reset();
    e->captured_nodes.clear();
    *queue = true;
    return cudaSuccess;
  }
  if (s->capture->invalidated != cudaSuccess) return cudaErrorStreamCaptureInvalidated;
  if ((flags & cudaEventRecordExternal) != 0) {
    NodeSpec node;
    node.work = NodeWork::EventRecord;
    node.what = "cudaEventRecord (external)";
    // At every launch (capture mutex held): the event's record is this launch's node.
    node.prepare = [e]() -> NodeRun {
      if (!live_event(e)) return nullptr;
      e->captured_in.reset();
      e->captured_nodes.clear();
      auto marker = std::make_shared<Completion>();
      set_event_marker(e, marker);
      return [marker] { Engine::get().complete(marker); };
    };
    if (const cudaError_t err = record_locked(s, std::move(node)); err != cudaSuccess) return err;
  }
  e->captured_in = s->capture;
  e->captured_nodes = s->capture_deps;
  return cudaSuccess;
}

cudaError_t Captures::wait_event(CUstream_st* s, cudaEvent_t e, unsigned flags, bool* queue) {
  const std::lock_guard<std::mutex> lock(m_);
  *queue = false;
  const std::shared_ptr<Capture> ec = e->captured_in;
  const bool ec_open = ec != nullptr && !ec->ended;
  Capture* sc = s->capture.get();
  if (sc == nullptr) {
    if (ec_open) {  // a fork: the stream joins the event's capture
      if (ec->invalidated != cudaSuccess) return cudaErrorStreamCaptureInvalidated;
      if (s->legacy) {
        invalidate(*ec, cudaErrorStreamCaptureImplicit);
        say("cudaStreamWaitEvent", "the legacy default stream cannot join a capture", cudaErrorStreamCaptureImplicit);
        return cudaErrorStreamCaptureImplicit;
      }
      if (s->device != ec->device) {
        invalidate(*ec, cudaErrorStreamCaptureUnsupported);
        say("cudaStreamWaitEvent", "a capture across devices is not emulated", cudaErrorStreamCaptureUnsupported);
        return cudaErrorStreamCaptureUnsupported;
      }
      s->capture = ec;
      s->capture_deps = e->captured_nodes;
      ec->streams.push_back(s);
      return cudaSuccess;
    }
    if (ec != nullptr) {
      say("cudaStreamWaitEvent", "the event was last recorded in a capture that has ended", cudaErrorCapturedEvent);
      return cudaErrorCapturedEvent;
    }
    if (const cudaError_t err = check_implicit_locked(s, "cudaStreamWaitEvent"); err != cudaSuccess) return err;
    *queue = true;
    return cudaSuccess;
  }
  if (sc->invalidated != cudaSuccess) return cudaErrorStreamCaptureInvalidated;
  if (ec_open && ec.get() == sc) {  // a join within the sequence
    add_unique(s->capture_deps, e->captured_nodes);
    return cudaSuccess;
  }
  if (ec_open) {
    invalidate(*sc, cudaErrorStreamCaptureMerge);
    invalidate(*ec, cudaErrorStreamCaptureMerge);
    say("cudaStreamWaitEvent", "the event belongs to another capture sequence", cudaErrorStreamCaptureMerge);
    return cudaErrorStreamCaptureMerge;
  }
  if ((flags & cudaEventWaitExternal) != 0) {
    NodeSpec node;
    node.work = NodeWork::EventWait;
    node.what = "cudaStreamWaitEvent (external)";
    // Binds at every launch to the event's record current then (as cudaStreamWaitEvent at its call).
    node.prepare = [e]() -> NodeRun {
      CompletionPtr marker = live_event(e) ? event_marker(e) : nullptr;
      return [marker] { Engine::get().await(marker); };
    };
    return record_locked(s, std::move(node));
  }
  invalidate(*sc, cudaErrorStreamCaptureIsolation);
  say("cudaStreamWaitEvent",
      "a capturing stream waits on an event not recorded in its capture (cudaEventWaitExternal makes it a wait node)",
      cudaErrorStreamCaptureIsolation);
  return cudaErrorStreamCaptureIsolation;
}

cudaError_t Captures::check_event(cudaEvent_t e, const char* api) {
  const std::lock_guard<std::mutex> lock(m_);
  if (e->captured_in == nullptr) return cudaSuccess;
  if (!e->captured_in->ended) invalidate(*e->captured_in, cudaErrorCapturedEvent);
  say(api, "the event was last recorded in a capturing stream", cudaErrorCapturedEvent);
  return cudaErrorCapturedEvent;
}

cudaError_t Captures::begin(CUstream_st* s, cudaStreamCaptureMode mode) {
  const std::lock_guard<std::mutex> lock(m_);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return cudaErrorInvalidValue;
  }
  if (s->legacy) {
    say("cudaStreamBeginCapture", "the legacy default stream cannot capture", cudaErrorStreamCaptureUnsupported);
    return cudaErrorStreamCaptureUnsupported;
  }
  if (s->capture != nullptr) return cudaErrorIllegalState;  // already capturing (or joined to a capture)
  auto c = std::make_shared<Capture>();
  c->id = next_id_++;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->device = s->device;
  c->origin = s;
  c->streams = {s};
  c->graph = std::make_unique<CUgraph_st>();
  c->graph->device = s->device;
  s->capture = c;
  s->capture_deps.clear();
  open_.push_back(std::move(c));
  return cudaSuccess;
}

void Captures::end_locked(Capture& c) {
  c.ended = true;
  const std::shared_ptr<Capture> keep = c.origin->capture;  // the streams hold the last references
  for (CUstream_st* t : c.streams) {
    t->capture.reset();
    t->capture_deps.clear();
  }
  open_.erase(std::remove(open_.begin(), open_.end(), keep), open_.end());
}

cudaError_t Captures::end(CUstream_st* s, cudaGraph_t* graph) {
  const std::lock_guard<std::mutex> lock(m_);
  if (graph == nullptr) return cudaErrorInvalidValue;
  if (s->capture == nullptr) return cudaErrorIllegalState;
  const std::shared_ptr<Capture> c = s->capture;
  if (c->origin != s) return cudaErrorStreamCaptureUnmatched;
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id()) {
    return cudaErrorStreamCaptureWrongThread;
  }
  *graph = nullptr;
  if (c->invalidated != cudaSuccess) {
    end_locked(*c);
    return cudaErrorStreamCaptureInvalidated;
  }
  // Every stream that joined must have been joined back: its last nodes are ancestors of the
  // origin's.
  const auto joined = ancestors(s->capture_deps, c->graph->nodes.size());
  for (const CUstream_st* t : c->streams) {
    for (const CUgraphNode_st* n : t->capture_deps) {
      if (std::find(joined.begin(), joined.end(), n) != joined.end()) continue;
      end_locked(*c);
      say("cudaStreamEndCapture",
          "a stream that joined the capture has work the capturing stream never waited for (join it back with an "
          "event)",
          cudaErrorStreamCaptureUnjoined);
      return cudaErrorStreamCaptureUnjoined;
    }
  }
  CUgraph_st* g = c->graph.release();
  graphs_.push_back(g);
  end_locked(*c);
  *graph = g;
  return cudaSuccess;
}

cudaError_t Captures::info(CUstream_st* s, cudaStreamCaptureStatus* status, unsigned long long* id, cudaGraph_t* graph,
                           const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges, std::size_t* count) {
  const std::lock_guard<std::mutex> lock(m_);
  if (status == nullptr || (edges != nullptr && deps == nullptr)) return cudaErrorInvalidValue;
  if (s->legacy) {
    for (const auto& c : open_) {
      const bool blocking =
          std::any_of(c->streams.begin(), c->streams.end(), [](const CUstream_st* t) { return t->blocking; });
      if (c->device == s->device && blocking) return cudaErrorStreamCaptureImplicit;  // not invalidated
    }
  }
  if (s->capture == nullptr) {
    *status = cudaStreamCaptureStatusNone;
    return cudaSuccess;
  }
  Capture& c = *s->capture;
  if (c.invalidated != cudaSuccess) {
    *status = cudaStreamCaptureStatusInvalidated;
    return cudaSuccess;
  }
  *status = cudaStreamCaptureStatusActive;
  if (id != nullptr) *id = c.id;
  if (graph != nullptr) *graph = c.graph.get();
  c.graph->info_deps.assign(s->capture_deps.begin(), s->capture_deps.end());
  c.graph->info_edges.assign(s->capture_deps.size(), cudaGraphEdgeData{});
  if (deps != nullptr) *deps = c.graph->info_deps.data();
  if (edges != nullptr) *edges = c.graph->info_edges.data();
  if (count != nullptr) *count = s->capture_deps.size();
  return cudaSuccess;
}

bool Captures::in_capture(CUstream_st* s) {
  const std::lock_guard<std::mutex> lock(m_);
  return s->capture != nullptr;
}

// ---- graphs -------------------------------------------------------------------------------------

bool Captures::live_graph_locked(cudaGraph_t g) const {
  if (g == nullptr) return false;
  if (std::find(graphs_.begin(), graphs_.end(), g) != graphs_.end()) return true;
  return std::any_of(open_.begin(), open_.end(), [g](const auto& c) { return c->graph.get() == g; });
}

cudaError_t Captures::destroy_graph(cudaGraph_t g) {
  const std::lock_guard<std::mutex> lock(m_);
  const auto it = std::find(graphs_.begin(), graphs_.end(), g);
  if (g == nullptr || it == graphs_.end()) return live_graph_locked(g) ? cudaErrorIllegalState : cudaErrorInvalidValue;
  graphs_.erase(it);
  delete g;  // executable graphs hold their own copy of the nodes
  return cudaSuccess;
}

cudaError_t Captures::instantiate(cudaGraph_t g, cudaGraphExec_t* exec, bool use_node_priority) {
  const std::lock_guard<std::mutex> lock(m_);
  if (!live_graph_locked(g) || exec == nullptr) return cudaErrorInvalidValue;
  const bool prioritized =
      std::any_of(g->nodes.begin(), g->nodes.end(), [](const auto& n) { return n->spec.priority != 0; });
  if (prioritized && !use_node_priority) counters::graph_priorities_dropped();
  auto spec = std::make_shared<GraphSpec>();
  spec->device = g->device;
  std::vector<std::pair<const void*, std::size_t>> last_serial;  // key -> last node index with it
  for (const auto& n : g->nodes) {
    spec->nodes.push_back(n->spec);
    std::vector<std::size_t> deps;
    for (const CUgraphNode_st* d : n->deps) deps.push_back(d->index);
    if (n->spec.serial != nullptr) {
      auto it = std::find_if(last_serial.begin(), last_serial.end(),
                             [&](const auto& e) { return e.first == n->spec.serial; });
      if (it == last_serial.end()) {
        last_serial.emplace_back(n->spec.serial, n->index);
      } else {
        if (std::find(deps.begin(), deps.end(), it->second) == deps.end()) deps.push_back(it->second);
        it->second = n->index;
      }
    }
    spec->deps.push_back(std::move(deps));
  }
  auto* e = new CUgraphExec_st();
  e->spec = std::move(spec);
  execs_.push_back(e);
  *exec = e;
  return cudaSuccess;
}

cudaError_t Captures::destroy_exec(cudaGraphExec_t exec) {
  const std::lock_guard<std::mutex> lock(m_);
  const auto it = std::find(execs_.begin(), execs_.end(), exec);
  if (exec == nullptr || it == execs_.end()) return cudaErrorInvalidValue;
  execs_.erase(it);
  delete exec;  // a launch in flight holds its own plan: it finishes, as documented
  return cudaSuccess;
}

cudaError_t Captures::launch(cudaGraphExec_t exec, CUstream_st* s) {
  const std::lock_guard<std::mutex> lock(m_);
  if (exec == nullptr || std::find(execs_.begin(), execs_.end(), exec) == execs_.end()) return cudaErrorInvalidValue;
  if (exec->spec->device != s->device) {
    say("cudaGraphLaunch", "the graph was captured on another device than the stream's", cudaErrorInvalidValue);
    return cudaErrorInvalidValue;
  }
  if (s->capture != nullptr) {  // a launch inside a capture is a child graph node
    NodeSpec node;
    node.work = NodeWork::ChildGraph;
    node.what = "cudaGraphLaunch (child graph)";
    node.child = exec->spec;
    return record_locked(s, std::move(node));
  }
  if (const cudaError_t e = check_implicit_locked(s, "cudaGraphLaunch"); e != cudaSuccess) return e;
  counters::graph_launch();
  const std::shared_ptr<const LaunchPlan> plan = prepare_plan(exec->spec);
  std::vector<CompletionPtr> deps;
  if (exec->last != nullptr) deps.push_back(exec->last);  // behind the previous launch, whatever its stream
  exec->last = Engine::get().enqueue(
      s, "cudaGraphLaunch", [plan] { run_plan(*plan); }, std::move(deps), [plan] { finish_plan(*plan); });
  return cudaSuccess;
}

cudaError_t Captures::nodes(cudaGraph_t g, cudaGraphNode_t* out, std::size_t* count) {
  const std::lock_guard<std::mutex> lock(m_);
  if (!live_graph_locked(g) || count == nullptr) return cudaErrorInvalidValue;
  if (out != nullptr) {
    const std::size_t n = std::min(*count, g->nodes.size());
    for (std::size_t i = 0; i < n; ++i) out[i] = g->nodes[i].get();
    for (std::size_t i = n; i < *count; ++i) out[i] = nullptr;
  }
  *count = g->nodes.size();
  return cudaSuccess;
}

cudaError_t Captures::node_type(cudaGraphNode_t node, cudaGraphNodeType* type) {
  const std::lock_guard<std::mutex> lock(m_);
  if (node == nullptr || type == nullptr) return cudaErrorInvalidValue;
  const auto holds = [node](const CUgraph_st* g) {
    return g != nullptr && node->index < g->nodes.size() && g->nodes[node->index].get() == node;
  };
  const bool live = std::any_of(graphs_.begin(), graphs_.end(), holds) ||
                    std::any_of(open_.begin(), open_.end(), [&](const auto& c) { return holds(c->graph.get()); });
  if (!live) return cudaErrorInvalidValue;
  // By NodeWork, in its order: cuBLAS and NCCL run kernels on a GPU.
  constexpr cudaGraphNodeType kTypes[] = {
      cudaGraphNodeTypeKernel,      cudaGraphNodeTypeKernel,    cudaGraphNodeTypeKernel,
      cudaGraphNodeTypeMemcpy,      cudaGraphNodeTypeMemset,    cudaGraphNodeTypeHost,
      cudaGraphNodeTypeEventRecord, cudaGraphNodeTypeWaitEvent, cudaGraphNodeTypeGraph};
  static_assert(std::size(kTypes) == static_cast<std::size_t>(NodeWork::ChildGraph) + 1);
  *type = kTypes[static_cast<std::size_t>(node->spec.work)];
  return cudaSuccess;
}

}  // namespace cuda_emu
