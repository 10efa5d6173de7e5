// event_log.hpp — the one source of timing truth: begin/end events of phases and collectives.
//
// Every timed thing in microddp (a step's phases, each layer's forward/backward, each collective
// from launch to completion and from start of execution to completion, the time the trainer waits
// for communication) is recorded here as an Event. The step table, the Chrome/Perfetto trace and the analysis (src/perf/) all read these
// events; nothing keeps a separate stopwatch.
//
// Contract: capacity is reserved up front; record() never allocates. When the log is full, further
// events are counted in dropped() instead of stored (the caller sizes the log so this does not
// happen in normal runs and reports it if it does). Not thread-safe: events are recorded by the
// training thread (collective completion times measured on the communication thread are handed
// over through the communicator, not written here concurrently).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/timer.hpp"

namespace microddp::core {

enum class EventKind : std::uint8_t {
  Step,      // a whole optimizer step (all micro-steps)
  Data,      // producing this rank's batch
  Forward,   // whole forward pass
  Backward,  // whole backward pass
  LayerForward,
  LayerBackward,
  Collective,  // one gradient collective, launch -> completion (id = parameter/bucket index)
  // The same collective from the moment it STARTED EXECUTING to its completion (same step, id and
  // bytes; the byte and collective counters read Collective only). Launch -> start is queueing
  // behind earlier collectives; the union of these intervals is the step's busy communication time
  // (perf/comm_busy.hpp), the denominator of overlap.
  CollectiveExec,
  CommWait,  // time the trainer blocked waiting for gradient communication (exposed comm)
  LossSync,  // the all-reduce of the scalar loss for reporting
  Optimizer,
  GradReady,  // instant: a parameter's gradient became ready (id = parameter index)
  Compress,   // gradient compression's encode/decode work of the step (ddp/compression): its TOTAL
              // duration, drawn as one interval ending when gradient synchronisation finished
};

std::string_view event_kind_name(EventKind kind);

struct Event {
  EventKind kind = EventKind::Step;
  std::int64_t step = 0;      // optimizer step (0-based)
  std::int32_t id = -1;       // layer / parameter / bucket index, -1 if not applicable
  std::int64_t begin_ns = 0;  // core::now_ns() clock
  std::int64_t end_ns = 0;    // == begin_ns for instants
  std::int64_t bytes = 0;     // payload of a collective
};

class EventLog {
 public:
  explicit EventLog(std::size_t capacity = 0) { events_.reserve(capacity); }
  void reserve(std::size_t capacity) { events_.reserve(capacity); }
  void clear() { events_.clear(); }

  void record(const Event& e) {
    if (events_.size() < events_.capacity()) {
      events_.push_back(e);
    } else {
      ++dropped_;
    }
  }
  void record(EventKind kind, std::int64_t step, std::int32_t id, std::int64_t begin_ns, std::int64_t end_ns,
              std::int64_t bytes = 0) {
    record(Event{kind, step, id, begin_ns, end_ns, bytes});
  }

  const std::vector<Event>& events() const { return events_; }
  std::size_t size() const { return events_.size(); }
  std::size_t capacity() const { return events_.capacity(); }
  std::uint64_t dropped() const { return dropped_; }

 private:
  std::vector<Event> events_;
  std::uint64_t dropped_ = 0;
};

// RAII interval: records [construction, destruction) into a log.
class ScopedEvent {
 public:
  ScopedEvent(EventLog& log, EventKind kind, std::int64_t step, std::int32_t id = -1, std::int64_t bytes = 0)
      : log_(log), kind_(kind), step_(step), id_(id), bytes_(bytes), begin_(now_ns()) {}
  ~ScopedEvent() { log_.record(kind_, step_, id_, begin_, now_ns(), bytes_); }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;

 private:
  EventLog& log_;
  EventKind kind_;
  std::int64_t step_;
  std::int32_t id_;
  std::int64_t bytes_;
  std::int64_t begin_;
};

}  // namespace microddp::core
