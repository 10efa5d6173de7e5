// grade_naive_dp.cpp — the grader of lab 04 (naive data parallelism, naive_data_parallel_sync).
//
// Part 1, closed form. A handful of "parameters" of different sizes (1 to 1000 floats) lie in one
// flat gradient buffer with padding between them, as the model lays them out. Global batch B = 8
// samples; sample j's gradient of element i is a small integer v(j, i); rank r's gradient is the
// sum of v over ITS samples (data::Sampler's share, uneven at 3 ranks: 3 + 3 + 2) divided by B, as
// the trainer computes it (loss / global batch). Every value is a multiple of 1/8 smaller than 2^10,
// so every sum is exact in fp32 in any order. Expected afterwards, on every rank: the mean over the
// GLOBAL batch, (1/B) sum_j v(j, i). Checked: every element on every rank; the padding untouched;
// and the collectives — exactly one all_reduce_sum per gradient, in ctx.grads() order, each on
// that whole gradient (naive DP: one collective per parameter, the same on every rank).
// Part 2, in the trainer. A small MLP (4 layers, 739 parameters) trains 6 Adam steps on a global
// batch of 10 (uneven shares) with `--strategy naive` and then with `--strategy lab` (your
// function through LabSync, the seam `train --strategy lab` uses) on the same communicator: the
// parameters must be bitwise identical (the same collectives on the same data give the same bits),
// and so must every step's loss.
// On a failure it says which rank, which parameter and element, what was expected and what came
// back, with a hint (divided by the world size? one collective for everything? 1 ulp off?), and
// exits 1 on every rank. Exit 0 and "PASS" when everything holds.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/event_log.hpp"
#include "data/synthetic_dataset.hpp"
#include "grader_training.hpp"
#include "labs/lab_api.hpp"
#include "labs/lab_strategies.hpp"
#include "labs/lab_sync.hpp"

namespace {

using namespace microddp;
using labs::grading::train;
using labs::grading::TrainRun;
using labs::grading::ulps;

constexpr const char* kLab = "04-naive-dp (naive_data_parallel_sync)";
constexpr std::int64_t kBatch = 8;    // global batch of part 1: a power of two, so 1/B is exact
constexpr float kPadding = -7777.0f;  // what the padding between gradients holds
// "Off by rounding" for the hints: scaling by 1/n and back, or another order of a few additions,
// moves a value by a handful of units in the last place; a real mistake by far more.
constexpr std::int64_t kFewUlps = 16;
const std::vector<std::int64_t> kCounts = {3, 1, 1000, 17, 64};  // part 1's "parameters", in ready order

// Sample j's gradient of element i of parameter p: a small integer in [-6, 6].
float sample_grad(std::int64_t j, int p, std::int64_t i) {
  return static_cast<float>((j * 5 + i * 3 + p * 7) % 13 - 6);
}

// What went wrong with value `got` where `want` was expected (n ranks; `mine`: this rank's input).
std::string hint(float got, float want, float mine, int n) {
  if (got == mine && got != want) return " (this rank's own gradient: it was not all-reduced)";
  if (n > 1 && (got == want / static_cast<float>(n) || got == want * (1.0f / static_cast<float>(n))))
    return " (the expected value divided by the world size " + std::to_string(n) +
           ": the trainer divides each rank's loss by the GLOBAL batch size, so the all-reduced sum is "
           "already the mean; dividing again shrinks the gradient n times — see the README)";
  if (n > 1 && got == want * static_cast<float>(n)) return " (n times the expected: added something n times?)";
  if (ulps(got, want) <= kFewUlps)
    return " (" + std::to_string(ulps(got, want)) +
           " ulp off: the right value up to rounding. The production naive strategy does no arithmetic of its "
           "own: it all-reduces (sums) and stops. Did you divide and multiply back, or scale by 1/n and n?)";
  return "";
}

// Part 1 on this rank: "" when it passed, else what went wrong.
std::string closed_form(comm::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  // The layout: each parameter at a multiple of 64 floats, padding between (model/param_layout.hpp).
  std::vector<model::ParamInfo> params;
  std::int64_t offset = 0;
  for (std::size_t p = 0; p < kCounts.size(); ++p) {
    model::ParamInfo info;
    info.name = "param_" + std::to_string(p);
    info.index = static_cast<int>(p);
    info.offset = offset;
    info.count = kCounts[p];
    info.rows = kCounts[p];
    info.cols = 1;
    params.push_back(info);
    offset += model::align_param_count(kCounts[p] + 1);  // at least one padding float after each
  }
  std::vector<float> grads(static_cast<std::size_t>(offset), kPadding);
  const data::Sampler mine(kBatch, r, n);
  std::vector<float> input(grads.size(), kPadding), want(grads.size(), kPadding);
  for (std::size_t p = 0; p < params.size(); ++p) {
    for (std::int64_t i = 0; i < params[p].count; ++i) {
      float local = 0.0f, global = 0.0f;
      for (std::int64_t j = 0; j < kBatch; ++j) {
        global += sample_grad(j, static_cast<int>(p), i);
        if (j >= mine.local_offset() && j < mine.local_offset() + mine.local_count())
          local += sample_grad(j, static_cast<int>(p), i);
      }
      const auto at = static_cast<std::size_t>(params[p].offset + i);
      input[at] = local / static_cast<float>(kBatch);
      want[at] = global / static_cast<float>(kBatch);
    }
  }
  grads = input;
  core::EventLog events;
  events.reserve(1024);
  labs::LabSync sync(comm, params, core::TensorView::of(grads.data(), offset), events);
  sync.on_backward_begin(0);
  for (const auto& p : params) sync.on_grad_ready(p);
  char msg[1024];
  try {
    sync.finish();
  } catch (const std::exception& e) {
    std::snprintf(msg, sizeof msg, "your function threw: %s", e.what());
    return msg;
  }
  const auto& calls = sync.context().calls();
  const auto& g = sync.context().grads();
  if (sync.context().calls_made() != static_cast<std::int64_t>(g.size())) {
    std::snprintf(
        msg, sizeof msg,
        "all_reduce_sum was called %lld times for %zu gradients; naive DP makes exactly one blocking "
        "all-reduce per gradient%s",
        static_cast<long long>(sync.context().calls_made()), g.size(),
        sync.context().calls_made() == 1 ? " (one call for everything is the `flat` strategy, another lesson)" : "");
    return msg;
  }
  for (std::size_t k = 0; k < g.size(); ++k) {
    if (calls[k].data != g[k].data || calls[k].count != g[k].count) {
      std::snprintf(msg, sizeof msg,
                    "all_reduce_sum call %zu was on %lld floats at element %lld of the gradient buffer; expected "
                    "gradient %zu (%.*s: %lld floats at element %lld) — one call per gradient, in ctx.grads() order",
                    k, static_cast<long long>(calls[k].count), static_cast<long long>(calls[k].data - grads.data()), k,
                    static_cast<int>(g[k].name.size()), g[k].name.data(), static_cast<long long>(g[k].count),
                    static_cast<long long>(g[k].data - grads.data()));
      return msg;
    }
  }
  for (std::size_t p = 0; p < params.size(); ++p) {
    for (std::int64_t i = 0; i < params[p].count; ++i) {
      const auto at = static_cast<std::size_t>(params[p].offset + i);
      if (grads[at] != want[at]) {
        std::snprintf(msg, sizeof msg,
                      "%s element %lld: expected %.9g (the mean over the global batch of %lld samples), got %.9g%s",
                      params[p].name.c_str(), static_cast<long long>(i), static_cast<double>(want[at]),
                      static_cast<long long>(kBatch), static_cast<double>(grads[at]),
                      hint(grads[at], want[at], input[at], n).c_str());
        return msg;
      }
    }
  }
  for (std::size_t at = 0; at < grads.size(); ++at) {
    if (want[at] == kPadding && grads[at] != kPadding) {
      std::snprintf(msg, sizeof msg, "wrote into the padding between gradients (element %zu of the flat buffer)", at);
      return msg;
    }
  }
  return "";
}

// The small MLP of part 2 with `strategy`.
ddp::TrainConfig part2_config(ddp::Strategy strategy) {
  ddp::TrainConfig cfg;
  cfg.model = model::MlpConfig{8, 16, 3, 3};
  cfg.global_batch = 10;
  cfg.steps = 6;
  cfg.seed = 5;
  cfg.strategy = strategy;
  return cfg;
}

// Part 2 on this rank: "" when it passed.
std::string in_the_trainer(comm::Communicator& comm) {
  const TrainRun ours = train(part2_config(ddp::Strategy::Naive), comm);
  TrainRun yours;
  char msg[1024];
  try {
    yours = train(part2_config(labs::lab_strategies().naive_dp), comm);
  } catch (const std::exception& e) {
    std::snprintf(msg, sizeof msg, "training with --strategy lab threw: %s", e.what());
    return msg;
  }
  for (const auto& p : ours.layout) {
    for (std::int64_t i = 0; i < p.count; ++i) {
      const auto at = static_cast<std::size_t>(p.offset + i);
      const float want = ours.params[at], got = yours.params[at];
      if (std::memcmp(&want, &got, sizeof want) != 0) {
        std::snprintf(msg, sizeof msg,
                      "after %zu Adam steps, parameter %s element %lld: --strategy naive gives %.9g, yours %.9g%s",
                      ours.losses.size(), p.name.c_str(), static_cast<long long>(i), static_cast<double>(want),
                      static_cast<double>(got),
                      ulps(got, want) <= kFewUlps
                          ? " (a few ulp off: same maths, other rounding — do no arithmetic of your "
                            "own on the gradients; the all-reduced sum is the result)"
                          : "");
        return msg;
      }
    }
  }
  for (std::size_t s = 0; s < ours.losses.size(); ++s) {
    if (ours.losses[s] != yours.losses[s]) {
      std::snprintf(msg, sizeof msg, "step %zu: loss %.17g with --strategy naive, %.17g with yours", s + 1,
                    ours.losses[s], yours.losses[s]);
      return msg;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  return labs::grading::run_trainer_grader(
      argc, argv, kLab, " (a hang here: ranks made different all-reduce calls)",
      {{closed_form, false, "closed form (part 1)"},
       {in_the_trainer, false, "in the trainer vs --strategy naive (part 2)"}},
      std::string("lab ") + kLab +
          ": global-batch means exact on every rank, one all-reduce per gradient in order; 6 training steps bitwise "
          "identical to --strategy naive");
}
