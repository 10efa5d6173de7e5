// grade_overlap.cpp — the grader of lab 05 (hooks and overlap: docs/labs/05-hooks-overlap).
//
// The lab's hooks always run inside LabOverlapSync (src/labs/lab_hooks.hpp), the GradSync that
// `--strategy lab-overlap` runs, over the real `mpi` communicator, whose all-reduces progress on
// the communication thread. Its HookRecorder notes where every launch and every wait happened.
//
// Part 1, the hooks alone, exact: a hand-made layout of 8 gradients (3 to 4160 floats, 256-byte
// aligned like the model's) and 3 steps driven as backward drives them (on_backward_begin, one
// on_grad_ready per gradient in gradient-ready order, finish). Rank r's element i of gradient p in
// step s is (r + 1) * ((i + 3p + s) % 11 + 1): small integers, so the sum over ranks is exact and
// known in closed form. Checks, every step: every element is the exact sum over ranks (and the
// padding between gradients is untouched); and the overlap itself — every all-reduce launched from
// its own gradient's hook (so before backward ended), no wait inside a hook or in backward_begin,
// every Work waited for in backward_end, no Work of an earlier step waited for again.
// Part 2, inside the trainer: 4 Adam steps of a small model (global batch 13: uneven shares; then
// with 2 accumulation micro-steps) with `lab-overlap` and with the production `overlap`, one after
// the other on the same ranks: every loss and every parameter bit must be identical, and the
// overlap checks of part 1 must hold in every real backward.
// Failures say which rank, step, gradient and element, what was expected and what came back, and
// for a serialised solution why that is not overlap. Exit 0 and "PASS" when everything holds.
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/event_log.hpp"
#include "grader_training.hpp"
#include "labs/lab_hooks.hpp"
#include "labs/lab_strategies.hpp"

namespace {

using namespace microddp;

constexpr float kPadding = 0.25f;  // the padding between gradients: no all-reduce may touch it
constexpr int kSteps = 3;

float input(int rank, int p, std::int64_t i, int step) {
  return static_cast<float>((rank + 1) * ((i + 3 * p + step) % 11 + 1));
}
float expected(int n, int p, std::int64_t i, int step) {
  return static_cast<float>(n * (n + 1) / 2 * ((i + 3 * p + step) % 11 + 1));
}

// Four layers' biases and weights in gradient-ready order, each starting 256-byte aligned.
std::vector<model::ParamInfo> layout() {
  struct Shape {
    const char* name;
    std::int64_t count;
  };
  const Shape shapes[] = {{"layer_03.bias", 3},      {"layer_03.weight", 192}, {"layer_02.bias", 64},
                          {"layer_02.weight", 4160}, {"layer_01.bias", 65},    {"layer_01.weight", 1105},
                          {"layer_00.bias", 17},     {"layer_00.weight", 85}};
  std::vector<model::ParamInfo> params;
  std::int64_t end = 0;
  for (const Shape& s : shapes) {
    model::ParamInfo p;
    p.name = s.name;
    p.index = static_cast<int>(params.size());
    p.offset = model::align_param_count(end);
    p.count = s.count;
    p.rows = s.count;
    p.cols = 1;
    params.push_back(p);
    end = p.offset + p.count;
  }
  return params;
}

// The recorder's verdict on the step it just saw: "" or what is wrong with the overlap.
std::string overlap_failure(const labs::HookRecorder& rec, std::size_t num_grads, const std::string& where) {
  if (rec.launches().size() != num_grads) {
    return where + ": " + std::to_string(rec.launches().size()) + " all-reduces launched, expected one per gradient (" +
           std::to_string(num_grads) + ")";
  }
  const std::string why = rec.overlap_violation();
  return why.empty() ? "" : where + ": " + why;
}

// Part 1 on this rank: "" when it passed.
std::string grade_hooks(comm::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  const std::vector<model::ParamInfo> params = layout();
  const std::int64_t flat = model::flat_count(params);
  std::vector<float> grads(static_cast<std::size_t>(flat));
  core::EventLog events(16 + 8 * params.size());
  labs::LabOverlapSync sync(comm, params, core::TensorView::of(grads.data(), flat), events);
  for (int s = 0; s < kSteps; ++s) {
    std::fill(grads.begin(), grads.end(), kPadding);
    for (const auto& p : params) {
      for (std::int64_t i = 0; i < p.count; ++i)
        grads[static_cast<std::size_t>(p.offset + i)] = input(r, p.index, i, s);
    }
    events.clear();
    sync.on_backward_begin(s);
    for (const auto& p : params) sync.on_grad_ready(p);  // backward: the output layer's gradients first
    sync.finish();
    const std::string where = "part 1 (the hooks alone), step " + std::to_string(s + 1);
    if (std::string f = overlap_failure(sync.recorder(), params.size(), where); !f.empty()) return f;
    char msg[640];
    std::int64_t pos = 0;
    for (const auto& p : params) {
      for (; pos < p.offset; ++pos) {  // the padding before p
        if (grads[static_cast<std::size_t>(pos)] != kPadding) {
          std::snprintf(msg, sizeof msg, "%s: element %" PRId64 " is padding before %s and must stay %.2f, got %.2f",
                        where.c_str(), pos, p.name.c_str(), static_cast<double>(kPadding),
                        static_cast<double>(grads[static_cast<std::size_t>(pos)]));
          return msg;
        }
      }
      for (std::int64_t i = 0; i < p.count; ++i, ++pos) {
        const float got = grads[static_cast<std::size_t>(p.offset + i)], want = expected(n, p.index, i, s);
        if (got != want) {
          const char* hint = got == input(r, p.index, i, s) ? " (this rank's own gradient: it was not all-reduced)"
                             : got == want / static_cast<float>(n)
                                 ? " (the sum divided by the number of ranks: microddp's loss is already divided "
                                   "by the global batch, so the SUM is the gradient)"
                                 : "";
          std::snprintf(msg, sizeof msg,
                        "%s, gradient %s (#%d), element %" PRId64
                        ": expected %.1f (the sum over %d ranks of (rank + 1) * %d), got %.1f%s",
                        where.c_str(), p.name.c_str(), p.index, i, static_cast<double>(want), n,
                        static_cast<int>((i + 3 * p.index + s) % 11 + 1), static_cast<double>(got), hint);
          return msg;
        }
      }
    }
  }
  return "";
}

struct Run {
  labs::grading::TrainRun run;
  std::string failure;  // overlap checks of the lab run
};

Run train(ddp::Strategy strategy, std::int64_t accum_steps, comm::Communicator& comm) {
  ddp::TrainConfig c;
  c.model = model::MlpConfig{12, 40, 3, 5};
  c.global_batch = 13;  // shares of 13 rows differ between ranks at 2, 3 and 4 ranks
  c.accum_steps = accum_steps;
  c.steps = 4;
  c.seed = 5;
  c.strategy = strategy;
  Run r;
  r.run = labs::grading::train(c, comm, [&](const ddp::Trainer& t, std::int64_t s) {
    const auto* lab = dynamic_cast<const labs::LabOverlapSync*>(&t.sync());
    if (lab != nullptr && r.failure.empty()) {
      r.failure = overlap_failure(
          lab->recorder(), t.model().params().size(),
          "part 2 (training, " + std::to_string(accum_steps) + " micro-step(s)), step " + std::to_string(s + 1));
    }
  });
  return r;
}

// Part 2 on this rank: "" when it passed.
std::string grade_training(comm::Communicator& comm, std::int64_t accum_steps) {
  const labs::grading::TrainRun ours = train(ddp::Strategy::Overlap, accum_steps, comm).run;
  const Run lab_run = train(labs::lab_strategies().overlap, accum_steps, comm);
  if (!lab_run.failure.empty()) return lab_run.failure;
  const labs::grading::TrainRun& lab = lab_run.run;
  const std::string where = "part 2 (training, " + std::to_string(accum_steps) + " micro-step(s))";
  char msg[512];
  for (std::size_t s = 0; s < ours.losses.size(); ++s) {
    if (lab.losses[s] != ours.losses[s]) {
      std::snprintf(msg, sizeof msg, "%s, step %zu: loss %.9g with lab-overlap, %.9g with overlap (must be identical)",
                    where.c_str(), s + 1, lab.losses[s], ours.losses[s]);
      return msg;
    }
  }
  for (std::size_t i = 0; i < ours.params.size(); ++i) {
    if (std::memcmp(&lab.params[i], &ours.params[i], sizeof(float)) != 0) {
      std::snprintf(msg, sizeof msg,
                    "%s: after %zu steps parameter element %zu is %.9g with lab-overlap, %.9g with overlap (must be "
                    "bitwise identical: the same all-reduces in the same order)",
                    where.c_str(), ours.losses.size(), i, static_cast<double>(lab.params[i]),
                    static_cast<double>(ours.params[i]));
      return msg;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  return labs::grading::run_trainer_grader(
      argc, argv, "05 (hooks and overlap: OverlapHooks)", "",
      {{grade_hooks}, {[](comm::Communicator& c) { return grade_training(c, 1); }}, {[](comm::Communicator& c) {
         return grade_training(c, 2);
       }}},
      "lab 05, " + std::to_string(kSteps) +
          " steps of hand-made gradients exact on every rank, every all-reduce launched from its hook and waited for "
          "after backward; training bitwise identical to `overlap`");
}
