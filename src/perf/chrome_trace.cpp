// chrome_trace.cpp — gathering events across ranks and turning them into Chrome trace JSON.
#include "perf/chrome_trace.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <utility>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace microddp::perf {

namespace {
constexpr std::int64_t kFields = 6;  // kind, step, id, begin, end, bytes
constexpr int kComputeTid = 1, kCommTid = 2;
}  // namespace

std::vector<RankEvents> gather_events(comm::Communicator& comm, const std::vector<core::Event>& events) {
  comm.barrier();
  const std::int64_t t_sync = core::now_ns();
  const int n = comm.size();
  std::int64_t mine = static_cast<std::int64_t>(events.size());
  std::vector<std::int64_t> counts(static_cast<std::size_t>(n));
  comm.all_gather(core::TensorView::of(&mine, 1), core::TensorView::of(counts.data(), n));
  const std::int64_t max_count = *std::max_element(counts.begin(), counts.end());
  // Fixed-size block per rank: [t_sync, count, events..., padding].
  const std::int64_t block = 2 + kFields * max_count;
  std::vector<std::int64_t> send(static_cast<std::size_t>(block), 0);
  send[0] = t_sync;
  send[1] = mine;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const core::Event& e = events[i];
    std::int64_t* f = send.data() + 2 + kFields * static_cast<std::int64_t>(i);
    f[0] = static_cast<std::int64_t>(e.kind);
    f[1] = e.step;
    f[2] = e.id;
    f[3] = e.begin_ns;
    f[4] = e.end_ns;
    f[5] = e.bytes;
  }
  std::vector<std::int64_t> recv(comm.rank() == 0 ? static_cast<std::size_t>(block * n) : 0);
  comm.gather(core::TensorView::of(send.data(), block),
              core::TensorView::of(recv.data(), comm.rank() == 0 ? block * n : 0), 0);
  std::vector<RankEvents> out;
  if (comm.rank() != 0) return out;
  const std::int64_t t0 = recv[0];
  for (int r = 0; r < n; ++r) {
    const std::int64_t* b = recv.data() + block * r;
    RankEvents re;
    re.rank = r;
    re.shift_ns = t0 - b[0];
    re.events.reserve(static_cast<std::size_t>(b[1]));
    for (std::int64_t i = 0; i < b[1]; ++i) {
      const std::int64_t* f = b + 2 + kFields * i;
      re.events.push_back(
          core::Event{static_cast<core::EventKind>(f[0]), f[1], static_cast<std::int32_t>(f[2]), f[3], f[4], f[5]});
    }
    out.push_back(std::move(re));
  }
  return out;
}

nlohmann::json chrome_trace(const std::vector<RankEvents>& ranks, const TraceLabels& labels,
                            const nlohmann::json& metadata) {
  using nlohmann::json;
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();
  for (const auto& r : ranks) {
    for (const auto& e : r.events) origin = std::min(origin, e.begin_ns + r.shift_ns);
  }
  json out = json::array();
  for (const auto& r : ranks) {
    auto us = [&](std::int64_t ns) { return static_cast<double>(ns + r.shift_ns - origin) * 1e-3; };
    out.push_back({{"ph", "M"},
                   {"pid", r.rank},
                   {"name", "process_name"},
                   {"args", {{"name", "rank " + std::to_string(r.rank)}}}});
    out.push_back({{"ph", "M"}, {"pid", r.rank}, {"name", "process_sort_index"}, {"args", {{"sort_index", r.rank}}}});
    out.push_back(
        {{"ph", "M"}, {"pid", r.rank}, {"tid", kComputeTid}, {"name", "thread_name"}, {"args", {{"name", "compute"}}}});
    out.push_back(
        {{"ph", "M"}, {"pid", r.rank}, {"tid", kCommTid}, {"name", "thread_name"}, {"args", {{"name", "comm"}}}});
    // Measured starts of execution, by (step, id). Without one (an event log from elsewhere), the
    // FIFO inference: a collective starts at its launch or when the previous one completed.
    std::vector<const core::Event*> colls;
    std::map<std::pair<std::int64_t, std::int32_t>, std::int64_t> started;
    for (const auto& e : r.events) {
      if (e.kind == core::EventKind::Collective) colls.push_back(&e);
      if (e.kind == core::EventKind::CollectiveExec) started[{e.step, e.id}] = e.begin_ns;
    }
    std::stable_sort(colls.begin(), colls.end(),
                     [](const core::Event* a, const core::Event* b) { return a->begin_ns < b->begin_ns; });
    std::int64_t prev_done = std::numeric_limits<std::int64_t>::min();
    std::int64_t queued_id = 0;  // async slice ids, unique per rank
    for (const core::Event* c : colls) {
      const auto measured = started.find({c->step, c->id});
      const std::int64_t start = measured != started.end() ? measured->second : std::max(c->begin_ns, prev_done);
      prev_done = std::max(prev_done, c->end_ns);
      const std::string label = labels.collective ? labels.collective(c->id) : "collective " + std::to_string(c->id);
      json args = {{"step", c->step + 1},
                   {"id", c->id},
                   {"bytes", c->bytes},
                   {"launch_us", us(c->begin_ns)},
                   {"queued_us", static_cast<double>(start - c->begin_ns) * 1e-3},
                   {"launch_to_done_us", static_cast<double>(c->end_ns - c->begin_ns) * 1e-3}};
      out.push_back({{"ph", "i"},
                     {"s", "t"},
                     {"pid", r.rank},
                     {"tid", kCommTid},
                     {"name", "launch " + label},
                     {"cat", "launch"},
                     {"ts", us(c->begin_ns)},
                     {"args", {{"step", c->step + 1}, {"id", c->id}}}});
      if (start > c->begin_ns) {
        const json qargs = {{"step", c->step + 1}, {"id", c->id}};
        const std::int64_t qid = static_cast<std::int64_t>(r.rank) * 1000000000 + queued_id++;
        for (const auto& [ph, t] : {std::pair{"b", c->begin_ns}, std::pair{"e", start}}) {
          out.push_back({{"ph", ph},
                         {"pid", r.rank},
                         {"tid", kCommTid},
                         {"id", qid},
                         {"name", "queued " + label},
                         {"cat", "queued"},
                         {"ts", us(t)},
                         {"args", qargs}});
        }
      }
      out.push_back({{"ph", "X"},
                     {"pid", r.rank},
                     {"tid", kCommTid},
                     {"name", "all_reduce " + label},
                     {"cat", "collective"},
                     {"ts", us(start)},
                     {"dur", static_cast<double>(std::max<std::int64_t>(0, c->end_ns - start)) * 1e-3},
                     {"args", args}});
    }
    for (const auto& e : r.events) {
      if (e.kind == core::EventKind::Collective || e.kind == core::EventKind::CollectiveExec) continue;
      const std::string kind(core::event_kind_name(e.kind));
      if (e.kind == core::EventKind::GradReady) {
        const std::string p = labels.param ? labels.param(e.id) : std::to_string(e.id);
        out.push_back({{"ph", "i"},
                       {"s", "t"},
                       {"pid", r.rank},
                       {"tid", kComputeTid},
                       {"name", "grad_ready " + p},
                       {"cat", kind},
                       {"ts", us(e.begin_ns)},
                       {"args", {{"step", e.step + 1}, {"id", e.id}, {"bytes", e.bytes}}}});
        continue;
      }
      std::string name = kind;
      if (e.kind == core::EventKind::Step) name = "step " + std::to_string(e.step + 1);
      if (e.kind == core::EventKind::LayerForward) name = "fwd layer " + std::to_string(e.id);
      if (e.kind == core::EventKind::LayerBackward) name = "bwd layer " + std::to_string(e.id);
      out.push_back({{"ph", "X"},
                     {"pid", r.rank},
                     {"tid", kComputeTid},
                     {"name", name},
                     {"cat", kind},
                     {"ts", us(e.begin_ns)},
                     {"dur", static_cast<double>(e.end_ns - e.begin_ns) * 1e-3},
                     {"args", {{"step", e.step + 1}, {"id", e.id}}}});
    }
  }
  json meta = metadata;
  meta["clock_alignment"] =
      "each rank's clock read right after a barrier; ranks shifted so these instants coincide (error: barrier exit "
      "skew)";
  return json{{"traceEvents", out}, {"displayTimeUnit", "ms"}, {"otherData", meta}};
}

void write_json_file(const std::string& path, const nlohmann::json& trace) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    MDDP_USAGE_CHECK(f.good(), "cannot open " << tmp << " for writing");
    f << trace.dump() << '\n';
    f.flush();
    MDDP_USAGE_CHECK(f.good(), "writing " << tmp << " failed");
  }
  MDDP_USAGE_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename " << tmp << " to " << path);
}

}  // namespace microddp::perf
