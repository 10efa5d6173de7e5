// grade_bucket_planner.cpp — the grader of lab 06 (bucketing: docs/labs/06-bucketing).
//
// Part 1, hand-picked cases with their plans written out: no parameters; one parameter; a cap
// smaller than every parameter; buckets exactly at the cap and one byte over it; one bucket for
// everything; padding that decides a bucket; a smaller (and a larger) first bucket; zero-sized
// parameters, one of them opening a bucket; the real model's layout. (The grader also checks that
// the production planner, src/ddp/bucket_planner.cpp, gives every written-out plan.)
// Part 2, equality with the production planner on 3000 random layouts: 0 to 40 parameters of 0 to
// 5000 floats, aligned or packed, caps from 1 byte to more than everything, with and without a first cap.
// Part 3, inside the trainer: 3 Adam steps of a small model with `lab-bucketed` and with the
// production `bucketed` for five bucket settings: the same buckets, and every loss and parameter bit identical.
// A failure names the case, the bucket, what was expected and what came back, and, when the plan
// matches a common slip (padding left out, closing a bucket that is exactly full, the first cap
// ignored), says which. Exit 0 and "PASS" when everything holds.
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ddp/bucket_planner.hpp"
#include "ddp/planned_sync.hpp"
#include "grader_training.hpp"
#include "labs/lab_api.hpp"
#include "labs/lab_planner.hpp"
#include "labs/lab_strategies.hpp"

namespace {

using namespace microddp;
using labs::LabBucket;
using labs::LabParam;

constexpr std::int64_t kAlign = model::kParamAlignFloats;  // 64 floats = 256 bytes
constexpr std::int64_t kB = labs::kGradElementBytes;

// Storage for the parameters' names (LabParam holds views), stable for the whole run.
std::string_view intern(std::string name) {
  static std::deque<std::string> names;
  return names.emplace_back(std::move(name));
}

struct Layout {
  std::vector<LabParam> params;
};

// Parameters of these counts; aligned[i]: parameter i starts at the next 256-byte boundary (as the
// model lays them out) rather than right after parameter i - 1.
Layout make_layout(const std::vector<std::int64_t>& counts, const std::vector<bool>& aligned) {
  Layout l;
  std::int64_t end = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const std::int64_t offset = aligned[i] ? model::align_param_count(end) : end;
    std::string name = "p";  // (not "p" + to_string: GCC 12 warns falsely, -Wrestrict, on that inlined)
    name += std::to_string(i);
    l.params.push_back(LabParam{intern(name), offset, counts[i]});
    end = offset + counts[i];
  }
  return l;
}
Layout aligned_layout(const std::vector<std::int64_t>& counts) {
  return make_layout(counts, std::vector<bool>(counts.size(), true));
}

// The production planner on a lab layout.
std::vector<LabBucket> production_plan(const std::vector<LabParam>& params, std::int64_t cap, std::int64_t first) {
  std::vector<model::ParamInfo> infos;
  for (std::size_t i = 0; i < params.size(); ++i) {
    model::ParamInfo p;
    p.name = std::string(params[i].name);
    p.index = static_cast<int>(i);
    p.offset = params[i].offset;
    p.count = params[i].count;
    infos.push_back(p);
  }
  std::vector<LabBucket> out;
  for (const ddp::Bucket& b : ddp::plan_buckets(infos, cap, first)) {
    out.push_back(LabBucket{b.first_param, b.end_param, b.offset, b.count});
  }
  return out;
}

// Common slips, each a planner with one rule changed, to name the slip when a plan matches one.
enum class Slip { NoPadding, CloseWhenFull, NoFirstCap };
std::vector<LabBucket> slipped_plan(const std::vector<LabParam>& params, std::int64_t cap, std::int64_t first,
                                    Slip slip) {
  std::vector<LabBucket> plan;
  LabBucket open;
  bool has_open = false;
  std::int64_t packed = 0;  // NoPadding: the open bucket's parameter elements without the gaps
  for (int i = 0; i < static_cast<int>(params.size()); ++i) {
    const LabParam& p = params[static_cast<std::size_t>(i)];
    const std::int64_t c = plan.empty() && first > 0 && slip != Slip::NoFirstCap ? first : cap;
    const std::int64_t with_p = slip == Slip::NoPadding ? packed + p.count : p.offset + p.count - open.offset;
    if (has_open && (slip == Slip::CloseWhenFull ? with_p * kB >= c : with_p * kB > c)) {
      plan.push_back(open);
      has_open = false;
    }
    if (!has_open) {
      open = LabBucket{i, i, p.offset, 0};
      has_open = true;
      packed = 0;
    }
    open.end_param = i + 1;
    open.count = p.offset + p.count - open.offset;
    packed += p.count;
  }
  if (has_open) plan.push_back(open);
  return plan;
}

bool same(const std::vector<LabBucket>& a, const std::vector<LabBucket>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].first_param != b[i].first_param || a[i].end_param != b[i].end_param || a[i].offset != b[i].offset ||
        a[i].count != b[i].count)
      return false;
  }
  return true;
}

std::string bucket_text(const LabBucket& k) {
  std::ostringstream os;
  os << "parameters [" << k.first_param << ", " << k.end_param << "), offset " << k.offset << ", count " << k.count
     << " (" << k.count * kB << " B)";
  return os.str();
}

std::string layout_text(const std::vector<LabParam>& params) {
  std::ostringstream os;
  os << params.size() << " parameter(s) (offset+count:";
  for (std::size_t i = 0; i < params.size() && i < 12; ++i) os << " " << params[i].offset << "+" << params[i].count;
  if (params.size() > 12) os << " ...";
  os << ")";
  return os.str();
}

// "" when `got` is `want`, else which bucket differs and how, with a hint when got is a known slip.
std::string compare(const std::string& what, const std::vector<LabParam>& params, std::int64_t cap, std::int64_t first,
                    const std::vector<LabBucket>& want, const std::vector<LabBucket>& got) {
  if (same(want, got)) return "";
  std::ostringstream os;
  os << "case '" << what << "', " << layout_text(params) << ", cap " << cap << " B, first cap " << first << " B: ";
  std::size_t b = 0;
  while (b < want.size() && b < got.size() && same({want[b]}, {got[b]})) ++b;
  if (b < want.size() && b < got.size()) {
    os << "bucket " << b << ": expected " << bucket_text(want[b]) << ", got " << bucket_text(got[b]);
  } else if (b < want.size()) {
    os << "expected " << want.size() << " bucket(s), got " << got.size() << ": bucket " << b << " (expected "
       << bucket_text(want[b]) << ") is missing";
  } else {
    os << "expected " << want.size() << " bucket(s), got " << got.size() << ": bucket " << b << " ("
       << bucket_text(got[b]) << ") is one too many";
  }
  const std::string structure = labs::plan_structure_error(params, got);
  if (!structure.empty()) {
    os << ". Not even a valid plan: " << structure;
  } else if (same(got, slipped_plan(params, cap, first, Slip::NoPadding))) {
    os << ". Hint: your sizes leave out the padding between parameters; a bucket's size is its whole slice, "
          "from its first parameter's offset to the end of its last";
  } else if (same(got, slipped_plan(params, cap, first, Slip::CloseWhenFull))) {
    os << ". Hint: a bucket exactly at its cap is allowed; close it only when the next parameter would make it "
          "EXCEED the cap";
  } else if (same(got, slipped_plan(params, cap, first, Slip::NoFirstCap))) {
    os << ". Hint: bucket 0's cap is first_cap_bytes when that is > 0";
  }
  return os.str();
}

// The student's plan, or the exception it threw as the failure.
std::string plan_and_compare(const std::string& what, const std::vector<LabParam>& params, std::int64_t cap,
                             std::int64_t first, const std::vector<LabBucket>& want) {
  std::vector<LabBucket> got;
  try {
    got = labs::plan_buckets(params, cap, first);
  } catch (const std::exception& e) {
    return "case '" + what + "': plan_buckets threw: " + e.what();
  }
  return compare(what, params, cap, first, want, got);
}

struct Case {
  std::string what;
  Layout layout;
  std::int64_t cap, first;
  std::vector<LabBucket> want;
};

std::vector<Case> hand_picked() {
  std::vector<Case> cases;
  // 100 floats each, aligned: offsets 0, 128, 256 (100 rounds up to 128); slices of 1, 2, 3 of them
  // are 400, 912 and 1424 bytes.
  const Layout three = aligned_layout({100, 100, 100});
  cases.push_back({"no parameters", aligned_layout({}), 1024, 0, {}});
  cases.push_back({"one parameter", aligned_layout({100}), 1024, 0, {{0, 1, 0, 100}}});
  cases.push_back({"cap smaller than any parameter (each gets its own bucket)",
                   three,
                   100,
                   0,
                   {{0, 1, 0, 100}, {1, 2, 128, 100}, {2, 3, 256, 100}}});
  cases.push_back({"first two exactly at the cap (912 B)", three, 912, 0, {{0, 2, 0, 228}, {2, 3, 256, 100}}});
  cases.push_back(
      {"one byte short of two (cap 911 B)", three, 911, 0, {{0, 1, 0, 100}, {1, 2, 128, 100}, {2, 3, 256, 100}}});
  cases.push_back({"all three exactly at the cap (1424 B)", three, 1424, 0, {{0, 3, 0, 356}}});
  cases.push_back({"one bucket for everything (25 MiB)", three, 25 << 20, 0, {{0, 3, 0, 356}}});
  // Counts alone would fit (3 x 10 floats = 120 B <= 300 B), the slice with its padding does not:
  // offsets 0, 64, 128 make two parameters 74 floats = 296 B and three 138 floats = 552 B.
  cases.push_back(
      {"padding counts toward the cap", aligned_layout({10, 10, 10}), 300, 0, {{0, 2, 0, 74}, {2, 3, 128, 10}}});
  cases.push_back({"packed parameters (no padding)",
                   make_layout({10, 10, 10}, {true, false, false}),
                   80,
                   0,
                   {{0, 2, 0, 20}, {2, 3, 20, 10}}});
  cases.push_back(
      {"smaller first bucket", aligned_layout({10, 10, 10, 10, 10}), 1024, 40, {{0, 1, 0, 10}, {1, 5, 64, 202}}});
  cases.push_back({"larger first bucket", three, 400, 912, {{0, 2, 0, 228}, {2, 3, 256, 100}}});
  // 5000 floats (20000 B) between small ones with a 1000 B cap: a bucket of its own.
  cases.push_back({"one parameter larger than the cap between small ones",
                   aligned_layout({10, 5000, 10, 10}),
                   1000,
                   0,
                   {{0, 1, 0, 10}, {1, 2, 64, 5000}, {2, 4, 5120, 74}}});
  // Zero-sized parameters: p1 right after p0 (offset 10), p3 at the next boundary (offset 128).
  cases.push_back({"zero-sized parameters",
                   make_layout({10, 0, 50, 0, 10}, {true, false, true, true, true}),
                   1024,
                   0,
                   {{0, 5, 0, 138}}});
  // p1 (0 floats) starts at 64: joining bucket 0 would make it 256 B > 100 B, so it opens bucket 1.
  cases.push_back(
      {"a zero-sized parameter opens a bucket", aligned_layout({10, 0, 10}), 100, 0, {{0, 1, 0, 10}, {1, 3, 64, 10}}});
  // The course's small model (width 16, depth 3: 8 tensors, gradient-ready order) at 1200 B.
  {
    Layout model_layout;
    for (const auto& p : model::param_layout(model::MlpConfig{8, 16, 3, 3})) {
      model_layout.params.push_back(LabParam{intern(p.name), p.offset, p.count});
    }
    // b3 (3 floats), W3 (48), b2 (16), W2 (256), b1 (16), W1 (256), b0 (16), W0 (128) at offsets 0, 64,
    // 128, 192, 448, 512, 768, 832; the cap is 300 floats.
    cases.push_back({"the small model at 1200 B",
                     model_layout,
                     1200,
                     0,
                     {{0, 3, 0, 144}, {3, 5, 192, 272}, {5, 7, 512, 272}, {7, 8, 832, 128}}});
  }
  return cases;
}

// Part 1 (every rank computes the same): "" when it passed.
std::string grade_hand_picked() {
  for (const Case& c : hand_picked()) {
    // The grader's own check: the written-out plan is the production planner's.
    const std::vector<LabBucket> ours = production_plan(c.layout.params, c.cap, c.first);
    if (!same(ours, c.want)) {
      return "internal: the grader's plan for case '" + c.what +
             "' is not the production planner's (src/ddp/bucket_planner.cpp changed?): " +
             compare(c.what, c.layout.params, c.cap, c.first, ours, c.want);
    }
    if (std::string f = plan_and_compare(c.what, c.layout.params, c.cap, c.first, c.want); !f.empty()) {
      return "part 1 (hand-picked), " + f;
    }
  }
  return "";
}

// Part 2 (every rank computes the same): "" when it passed.
std::string grade_random(int cases) {
  std::uint64_t state = 0x9E3779B97F4A7C15ull;  // splitmix64: the same layouts on every platform
  auto next = [&state](std::uint64_t bound) {
    state += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<std::int64_t>((z ^ (z >> 31)) % bound);
  };
  for (int c = 0; c < cases; ++c) {
    const auto n = static_cast<std::size_t>(next(41));
    const bool packed = next(4) == 0;  // a quarter of the layouts mix packed parameters in
    std::vector<std::int64_t> counts(n);
    std::vector<bool> aligned(n);
    std::int64_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t kind = next(10);  // mostly small, some zero, some large
      counts[i] = kind == 0 ? 0 : kind < 7 ? 1 + next(300) : 1 + next(5000);
      aligned[i] = !packed || next(2) == 0;
      total += counts[i] + kAlign;
    }
    const Layout l = make_layout(counts, aligned);
    // Caps from 1 byte to more than the whole buffer.
    const std::int64_t cap = 1 + next(std::max<std::int64_t>(2, total * kB + 1024));
    const std::int64_t first = next(3) == 0 ? 1 + next(std::max<std::int64_t>(2, total * kB / 2 + 1)) : 0;
    const std::string what = "random layout " + std::to_string(c + 1) + " of " + std::to_string(cases);
    if (std::string f = plan_and_compare(what, l.params, cap, first, production_plan(l.params, cap, first));
        !f.empty()) {
      return "part 2 (equal to the production planner), " + f;
    }
  }
  return "";
}

struct Run {
  labs::grading::TrainRun run;
  std::vector<ddp::Bucket> buckets;
};

Run train(ddp::Strategy strategy, const ddp::GradSyncOptions& options, comm::Communicator& comm) {
  ddp::TrainConfig c;
  c.model = model::MlpConfig{8, 16, 3, 3};  // 8 tensors, 739 parameters: several buckets at small caps
  c.global_batch = 13;
  c.steps = 3;
  c.seed = 7;
  c.strategy = strategy;
  c.sync_options = options;
  Run r;
  r.run = labs::grading::train(c, comm, [&](const ddp::Trainer& t, std::int64_t) {
    r.buckets = dynamic_cast<const ddp::PlannedSync&>(t.sync()).buckets();
  });
  return r;
}

// Part 3 on this rank: "" when it passed.
std::string grade_training(comm::Communicator& comm) {
  constexpr double kByte = 1.0 / (1024.0 * 1024.0);  // one byte in MiB
  struct Setting {
    const char* what;
    ddp::GradSyncOptions options;
  };
  const Setting settings[] = {
      {"one bucket (25 MiB)", {25.0, 0.0}},
      {"a few buckets (1200 B)", {1200 * kByte, 0.0}},
      {"one per parameter (16 B)", {16 * kByte, 0.0}},
      {"cap 200 B", {200 * kByte, 0.0}},
      {"first bucket 16 B, then 1 MiB", {1.0, 16 * kByte}},
  };
  char msg[512];
  for (const Setting& s : settings) {
    const Run ours = train(ddp::Strategy::Bucketed, s.options, comm);
    const Run lab = train(labs::lab_strategies().bucketed, s.options, comm);
    const std::string where = std::string("part 3 (training, ") + s.what + ")";
    if (ours.buckets.size() != lab.buckets.size()) {
      return where + ": " + std::to_string(lab.buckets.size()) + " bucket(s) with lab-bucketed, " +
             std::to_string(ours.buckets.size()) + " with bucketed";
    }
    for (std::size_t b = 0; b < ours.buckets.size(); ++b) {
      const ddp::Bucket &x = ours.buckets[b], &y = lab.buckets[b];
      if (x.first_param != y.first_param || x.end_param != y.end_param || x.offset != y.offset || x.count != y.count) {
        return where + ": bucket " + std::to_string(b) + ": expected " +
               bucket_text({x.first_param, x.end_param, x.offset, x.count}) + ", got " +
               bucket_text({y.first_param, y.end_param, y.offset, y.count});
      }
    }
    for (std::size_t k = 0; k < ours.run.losses.size(); ++k) {
      if (lab.run.losses[k] != ours.run.losses[k]) {
        std::snprintf(msg, sizeof msg, "%s, step %zu: loss %.9g with lab-bucketed, %.9g with bucketed", where.c_str(),
                      k + 1, lab.run.losses[k], ours.run.losses[k]);
        return msg;
      }
    }
    for (std::size_t i = 0; i < ours.run.params.size(); ++i) {
      if (std::memcmp(&lab.run.params[i], &ours.run.params[i], sizeof(float)) != 0) {
        std::snprintf(msg, sizeof msg, "%s: parameter element %zu is %.9g with lab-bucketed, %.9g with bucketed",
                      where.c_str(), i, static_cast<double>(lab.run.params[i]),
                      static_cast<double>(ours.run.params[i]));
        return msg;
      }
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  constexpr int kRandomCases = 3000;
  return labs::grading::run_trainer_grader(
      argc, argv, "06 (bucketing: plan_buckets)", "",
      {{[](comm::Communicator&) { return grade_hand_picked(); }, /*same_everywhere=*/true},
       {[](comm::Communicator&) { return grade_random(kRandomCases); }, /*same_everywhere=*/true},
       {grade_training}},
      "lab 06, " + std::to_string(hand_picked().size()) + " hand-picked plans exact, " + std::to_string(kRandomCases) +
          " random layouts equal to the production planner, training with lab-bucketed bitwise identical to bucketed");
}
