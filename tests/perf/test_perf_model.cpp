// test_perf_model.cpp — the α-β model: cost formulas on hand-computed cases, the fit recovering
// known parameters from synthetic data, the step schedule simulation, the bench reader and the
// analysis bookkeeping (phases add up to the step).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include "comm/factory.hpp"
#include "ddp/bucket_planner.hpp"
#include "perf/alpha_beta.hpp"
#include "perf/analysis.hpp"
#include "perf/analysis_report.hpp"
#include "perf/bench_rows.hpp"
#include "perf/comm_model_io.hpp"
#include "perf/link_classes.hpp"
#include "perf/peer_arrival.hpp"
#include "perf/step_model.hpp"

namespace microddp::perf {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

TEST(CostFormulas, HandComputedCases) {
  // Ring, n = 4, S = 1 MiB: 2(n-1) = 6 latencies, 2(n-1)/n·S = 1.5 MiB over the link, (n-1)/n·S reduced.
  Coefficients k = cost_coefficients(Collective::AllReduce, Algorithm::Ring, 4, kMiB);
  EXPECT_DOUBLE_EQ(k.a, 6.0);
  EXPECT_DOUBLE_EQ(k.b, 1.5 * kMiB);
  EXPECT_DOUBLE_EQ(k.c, 0.75 * kMiB);
  // α = 5 µs, β = 1/(10 GB/s) = 0.1 ns/B: 30 µs + 1.5·1048576·0.1 ns = 30 + 157.2864 µs.
  const AlphaBeta ab{5e-6, 1e-10, 0};
  EXPECT_NEAR(ab.time_s(k), 30e-6 + 157.2864e-6, 1e-12);
  // Recursive doubling, n = 8: 3 rounds of (α + S·β).
  k = cost_coefficients(Collective::AllReduce, Algorithm::RecursiveDoubling, 8, 1000);
  EXPECT_DOUBLE_EQ(k.a, 3.0);
  EXPECT_DOUBLE_EQ(k.b, 3000.0);
  // Non-power of two (n = 6): 2 rounds among 4 + fold-in and fold-out.
  k = cost_coefficients(Collective::AllReduce, Algorithm::RecursiveDoubling, 6, 1000);
  EXPECT_DOUBLE_EQ(k.a, 4.0);
  EXPECT_DOUBLE_EQ(k.b, 4000.0);
  // Naive, n = 3: 2(n-1) = 4 whole-buffer messages through rank 0.
  k = cost_coefficients(Collective::AllReduce, Algorithm::Naive, 3, 100);
  EXPECT_DOUBLE_EQ(k.a, 4.0);
  EXPECT_DOUBLE_EQ(k.b, 400.0);
  // One rank: free.
  k = cost_coefficients(Collective::AllReduce, Algorithm::Ring, 1, kMiB);
  EXPECT_EQ(k.a + k.b + k.c, 0.0);
  // Auto models what the `auto` backend runs: rd (2 latencies at n = 4) up to its switch point,
  // above it the backend's model choice, at n = 4 Rabenseifner (4), at n = 3 the ring (4). The switch
  // point is the backend's own (its description, the measured 16 KiB of docs/allreduce.md); a copy of
  // 64 KiB once made the model take rd where the backend ran the ring.
  const double switch_bytes = static_cast<double>(comm::describe_backend("auto").switch_bytes);
  EXPECT_EQ(switch_bytes, 16.0 * 1024);
  EXPECT_DOUBLE_EQ(cost_coefficients(Collective::AllReduce, Algorithm::Auto, 4, 1024).a, 2.0);
  EXPECT_DOUBLE_EQ(cost_coefficients(Collective::AllReduce, Algorithm::Auto, 4, switch_bytes).a, 2.0);
  EXPECT_DOUBLE_EQ(cost_coefficients(Collective::AllReduce, Algorithm::Auto, 4, switch_bytes + 4).a, 4.0);
  EXPECT_DOUBLE_EQ(cost_coefficients(Collective::AllReduce, Algorithm::Auto, 4, 32.0 * 1024).a, 4.0);
  EXPECT_DOUBLE_EQ(cost_coefficients(Collective::AllReduce, Algorithm::Auto, 4, kMiB).a, 4.0);
  EXPECT_DOUBLE_EQ(cost_coefficients(Collective::AllReduce, Algorithm::Auto, 4, kMiB).b, 1.5 * kMiB);
  EXPECT_DOUBLE_EQ(cost_coefficients(Collective::AllReduce, Algorithm::Auto, 3, kMiB).a, 4.0);
  // Rabenseifner, n = 8: 3 halving + 3 doubling steps, the ring's 2·7/8·S; the double tree at n = 4,
  // 8 MiB (one 4 MiB segment per half): 2 steps up, 2 down, each carrying two children's halves.
  k = cost_coefficients(Collective::AllReduce, Algorithm::Rabenseifner, 8, 1000);
  EXPECT_DOUBLE_EQ(k.a, 6.0);
  EXPECT_DOUBLE_EQ(k.b, 1750.0);
  k = cost_coefficients(Collective::AllReduce, Algorithm::DoubleBinaryTree, 4, 8 * kMiB);
  EXPECT_DOUBLE_EQ(k.a, 4.0);
  EXPECT_DOUBLE_EQ(k.b, 32 * kMiB);
  // Link parameters: 100 Gbit/s = 12.5 GB/s -> 0.08 ns/B.
  const AlphaBeta link = AlphaBeta::from_link(100, 2);
  EXPECT_NEAR(link.beta_s_per_byte, 0.08e-9, 1e-20);
  EXPECT_NEAR(link.alpha_s, 2e-6, 1e-18);
}

// The model asks each backend which all-reduce it runs (comm's backend descriptions) instead of
// keeping a list of its own: at every size and rank count the modelled algorithm is the one the
// backend executes, libraries' own choices modelled as a ring.
TEST(CostFormulas, ModelledAlgorithmIsTheBackendsOwn) {
  EXPECT_EQ(algorithm_for_backend("naive"), Algorithm::Naive);
  EXPECT_EQ(algorithm_for_backend("ring"), Algorithm::Ring);
  EXPECT_EQ(algorithm_for_backend("rd"), Algorithm::RecursiveDoubling);
  EXPECT_EQ(algorithm_for_backend("rd+dsync"), Algorithm::RecursiveDoubling);
  EXPECT_EQ(algorithm_for_backend("auto"), Algorithm::Auto);
  EXPECT_EQ(algorithm_for_backend("rabenseifner"), Algorithm::Rabenseifner);
  EXPECT_EQ(algorithm_for_backend("dbtree"), Algorithm::DoubleBinaryTree);
  EXPECT_EQ(algorithm_for_backend("mpi"), Algorithm::Ring);
  EXPECT_EQ(algorithm_for_backend("nccl"), Algorithm::Ring);  // described even in a build without NCCL
  EXPECT_EQ(algorithm_for_backend("nccl-ring"), Algorithm::Ring);
  EXPECT_EQ(algorithm_for_backend("someone-elses"), Algorithm::Ring);
  for (const char* name : {"naive", "ring", "rd", "rabenseifner", "dbtree", "auto"}) {
    const comm::BackendDescription d = comm::describe_backend(name);
    for (int n : {2, 3, 4, 5, 7, 8}) {
      for (double bytes = 4; bytes <= 4 * kMiB; bytes *= 2) {
        for (double b : {bytes - 4, bytes, bytes + 4}) {
          const comm::AllReduceAlgorithm runs = d.all_reduce_algorithm(static_cast<std::int64_t>(b), n);
          const Algorithm modelled = resolve_algorithm(algorithm_for_backend(name), n, b);
          EXPECT_EQ(algorithm_name(modelled), comm::all_reduce_algorithm_name(runs))
              << name << " n=" << n << " " << b << " B";
        }
      }
    }
  }
}

TEST(Fit, RecoversKnownAlphaBetaExactly) {
  const double alpha = 3.5e-6, beta = 0.25e-9;  // 3.5 µs, 4 GB/s
  for (Algorithm algo : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Naive, Algorithm::Rabenseifner,
                         Algorithm::DoubleBinaryTree}) {
    std::vector<Sample> s;
    for (int n : {2, 4, 8})
      for (double bytes = 4; bytes <= 64 * kMiB; bytes *= 4) {
        const AlphaBeta ab{alpha, beta, 0};
        s.push_back({n, bytes, ab.time_s(cost_coefficients(Collective::AllReduce, algo, n, bytes))});
      }
    const FitResult f = fit_alpha_beta(Collective::AllReduce, algo, s);
    EXPECT_NEAR(f.model.alpha_s / alpha, 1.0, 1e-9) << algorithm_name(algo);
    EXPECT_NEAR(f.model.beta_s_per_byte / beta, 1.0, 1e-9) << algorithm_name(algo);
    EXPECT_NEAR(f.r2, 1.0, 1e-12);
    EXPECT_LT(f.max_rel_residual, 1e-9);
  }
}

TEST(Fit, RecoversWithMultiplicativeNoise) {
  // ±5% uniform noise (the machine's run-to-run spread is ~10%): α and β within 5%.
  const double alpha = 10e-6, beta = 1.0 / 8e9;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  std::vector<Sample> s;
  for (int rep = 0; rep < 5; ++rep)
    for (double bytes = 4; bytes <= 256 * kMiB; bytes *= 2) {
      const AlphaBeta ab{alpha, beta, 0};
      s.push_back(
          {2, bytes, ab.time_s(cost_coefficients(Collective::AllReduce, Algorithm::Ring, 2, bytes)) * (1 + u(rng))});
    }
  const FitResult f = fit_alpha_beta(Collective::AllReduce, Algorithm::Ring, s);
  EXPECT_NEAR(f.model.alpha_s / alpha, 1.0, 0.05);
  EXPECT_NEAR(f.model.beta_s_per_byte / beta, 1.0, 0.05);
  EXPECT_GT(f.r2, 0.99);
  EXPECT_LT(f.max_rel_residual, 0.12);
}

TEST(Fit, ClampsNegativeLatencyAndRejectsTooFewPoints) {
  // Pure bandwidth data with a slightly concave shape would fit α < 0: clamp to 0.
  std::vector<Sample> s = {{2, 1e3, 0.9e-6}, {2, 1e6, 1e-3}, {2, 1e7, 1e-2}};
  const FitResult f = fit_alpha_beta(Collective::AllReduce, Algorithm::Ring, s);
  EXPECT_GE(f.model.alpha_s, 0.0);
  EXPECT_GT(f.model.beta_s_per_byte, 0.0);
  EXPECT_THROW(fit_alpha_beta(Collective::AllReduce, Algorithm::Ring, {{2, 8, 1e-6}}), std::exception);
}

// A communication model holding one all-reduce entry, backend "mpi", with this fit.
CommModel mpi_model_of(const FitResult& f) {
  ModelEntry e;
  e.backend = "mpi";
  e.fit = f;
  CommModel m;
  m.entries.push_back(e);
  return m;
}

TEST(Fit, SizeRegimesRecoverAPiecewiseLine) {
  // Two regimes with a switch between 1 MiB and 2 MiB (cache-resident vs DRAM-streamed): 2 µs and
  // 8 GB/s below, 30 µs and 2 GB/s above. The one line misses both ends; the regimes are exact.
  const AlphaBeta small{2e-6, 1.0 / 8e9, 0}, large{30e-6, 1.0 / 2e9, 0};
  std::vector<Sample> s;
  for (double bytes = 4; bytes <= 64 * kMiB; bytes *= 2) {
    const AlphaBeta& ab = bytes <= kMiB ? small : large;
    s.push_back({4, bytes, ab.time_s(cost_coefficients(Collective::AllReduce, Algorithm::Ring, 4, bytes))});
  }
  const FitResult f = fit_alpha_beta_regimes(Collective::AllReduce, Algorithm::Ring, s);
  ASSERT_EQ(f.regimes.size(), 2u);
  EXPECT_EQ(f.regimes[0].from_bytes, 0.0);
  EXPECT_NEAR(f.regimes[1].from_bytes, std::sqrt(kMiB * 2 * kMiB), 1e-6);  // geometric middle of the gap
  EXPECT_NEAR(f.regimes[0].model.alpha_s / small.alpha_s, 1.0, 1e-6);
  EXPECT_NEAR(f.regimes[0].model.beta_s_per_byte / small.beta_s_per_byte, 1.0, 1e-6);
  EXPECT_NEAR(f.regimes[1].model.alpha_s / large.alpha_s, 1.0, 1e-6);
  EXPECT_NEAR(f.regimes[1].model.beta_s_per_byte / large.beta_s_per_byte, 1.0, 1e-6);
  EXPECT_LT(f.max_rel_residual, 1e-6);
  EXPECT_GT(f.line_rms_rel_residual, 0.1);  // the single line is visibly wrong here
  EXPECT_EQ(&f.model_for(4 * kMiB), &f.regimes[1].model);
  EXPECT_EQ(&f.model_for(100), &f.regimes[0].model);
  // A model entry predicts with the regime of the size; the regimes survive the model file.
  const CommModel m = mpi_model_of(f);
  const CommModel back = comm_model_from_json(to_json(m));
  ASSERT_EQ(back.entries.at(0).fit.regimes.size(), 2u);
  for (double bytes : {64.0, 3 * kMiB, 48 * kMiB}) {
    const AlphaBeta& ab = bytes <= kMiB ? small : large;
    const double want = ab.time_s(cost_coefficients(Collective::AllReduce, Algorithm::Ring, 4, bytes));
    EXPECT_NEAR(back.time_s("mpi", Collective::AllReduce, 4, bytes) / want, 1.0, 1e-6) << bytes;
  }
  // Malformed regimes are refused with a message, never used: not starting at 0, not ascending.
  auto j = to_json(m);
  j["entries"][0]["regimes"][0]["from_bytes"] = 5.0;
  EXPECT_THROW(comm_model_from_json(j), core::UsageError);
  j = to_json(m);
  j["entries"][0]["regimes"][1]["from_bytes"] = 0.0;
  EXPECT_THROW(comm_model_from_json(j), core::UsageError);
  j = to_json(m);
  j["entries"][0]["regimes"][1]["beta_ns_per_byte"] = -1.0;
  EXPECT_THROW(comm_model_from_json(j), core::UsageError);
}

TEST(Fit, SizeRegimesAreNotInventedFromOneLine) {
  // Exact single-line data, and the same with ±5% noise: one line explains it, so no regimes
  // (BIC: more parameters must pay for themselves), and the prediction stays within the noise.
  const AlphaBeta ab{10e-6, 1.0 / 8e9, 0};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  for (double noise : {0.0, 1.0}) {
    std::vector<Sample> s;
    for (int rep = 0; rep < 3; ++rep)
      for (double bytes = 4; bytes <= 64 * kMiB; bytes *= 2)
        s.push_back(
            {2, bytes,
             ab.time_s(cost_coefficients(Collective::AllReduce, Algorithm::Ring, 2, bytes)) * (1 + noise * u(rng))});
    const FitResult f = fit_alpha_beta_regimes(Collective::AllReduce, Algorithm::Ring, s);
    EXPECT_TRUE(f.regimes.empty()) << "noise " << noise << ": " << f.regimes.size() << " regimes";
    EXPECT_LT(f.max_rel_residual, 0.12);
  }
}

TEST(Fit, BurstCreditOfATokenBucketIsARegime) {
  // Two ranks on two hosts joined by a token-bucket shaper (tc tbf): the first B = 1 MiB after an
  // idle moment pass at 2 GB/s, the rest at the sustained 0.125 GB/s (1 Gbit/s). A 2-rank ring moves
  // S bytes over the link, so an isolated all-reduce takes 2α0 + S/Rpeak up to B and
  // 2α0 + B/Rpeak + (S - B)/R above: a line whose intercept is negative (-B/R + ...). Clamping that
  // intercept to 0 leaves the slope to split the difference (sizes above B off by up to ~40%); the
  // burst regime is exact, and its sustained time is the sustained rate's.
  const double a0 = 30e-6, rpeak = 2e9, rate = 0.125e9, burst = kMiB;
  auto isolated = [&](double bytes) {
    return 2 * a0 + std::min(bytes, burst) / rpeak + std::max(0.0, bytes - burst) / rate;
  };
  std::vector<Sample> s;
  for (double bytes = 4096; bytes <= 64 * kMiB; bytes *= 2) s.push_back({2, bytes, isolated(bytes)});
  const FitResult f = fit_alpha_beta_regimes(Collective::AllReduce, Algorithm::Ring, s);
  ASSERT_TRUE(f.has_burst_credit()) << f.regimes.size() << " regimes";
  EXPECT_LT(f.max_rel_residual, 0.02);
  const auto k16 = cost_coefficients(Collective::AllReduce, Algorithm::Ring, 2, 16 * kMiB);
  const AlphaBeta& m16 = f.model_for(16 * kMiB);
  ASSERT_GT(m16.credit_s, 0.0);
  EXPECT_EQ(m16.alpha_s, 0.0);
  // The credit is per collective: at 4 ranks the ring sends 6 messages instead of 2, the credit
  // stays what it was (a negative α would triple it).
  const auto k16_4 = cost_coefficients(Collective::AllReduce, Algorithm::Ring, 4, 16 * kMiB);
  EXPECT_NEAR(m16.time_s(k16_4), k16_4.b * m16.beta_s_per_byte - m16.credit_s, 1e-12);
  EXPECT_NEAR(m16.credit_s / (burst / rate - burst / rpeak - 2 * a0), 1.0, 0.02);
  EXPECT_NEAR(m16.time_s(k16) / isolated(16 * kMiB), 1.0, 0.01);
  // Streamed after 16 MiB of the same busy period, 16 MiB more take 16 MiB at the sustained rate.
  ModelEntry one;
  one.fit = f;
  EXPECT_NEAR(one.streamed_time_s(2, 16 * kMiB, 16 * kMiB) / (16 * kMiB / rate), 1.0, 0.01);
  // The smallest sizes keep a positive intercept: the first regime never holds a credit.
  EXPECT_EQ(f.model_for(4096).credit_s, 0.0);
  // The credit survives the model file; a credit in the first regime, or one that makes a regime's
  // time negative where it starts, is refused.
  const CommModel m = mpi_model_of(f);
  const CommModel back = comm_model_from_json(to_json(m));
  // analyze's --burst-credit: "every" (default) gives a collective its measured time whatever came
  // before, "idle" streams a busy period as one transfer.
  const AllReduceTime every = model_allreduce(m, "mpi", 2, false, /*burst_credit_refills_when_idle=*/false);
  const AllReduceTime idle = model_allreduce(m, "mpi", 2, false, /*burst_credit_refills_when_idle=*/true);
  EXPECT_DOUBLE_EQ(every.streamed(16 * kMiB, 16 * kMiB), every(16 * kMiB));
  EXPECT_DOUBLE_EQ(idle(16 * kMiB), every(16 * kMiB));
  EXPECT_NEAR(idle.streamed(16 * kMiB, 16 * kMiB) / (16 * kMiB / rate), 1.0, 0.01);
  auto j = to_json(m);
  j["entries"][0]["regimes"][0]["credit_us"] = 1.0;
  EXPECT_THROW(comm_model_from_json(j), core::UsageError);
  j = to_json(m);
  const std::size_t last = f.regimes.size() - 1;
  j["entries"][0]["regimes"][last]["credit_us"] = 1e9;
  EXPECT_THROW(comm_model_from_json(j), core::UsageError);
  j = to_json(m);
  j["entries"][0]["regimes"][last]["alpha_us"] = -1.0;
  EXPECT_THROW(comm_model_from_json(j), core::UsageError);
}

TEST(BenchReader, CsvAndJsonWithAliasesFitTheSameModel) {
  const double alpha = 2e-6, beta = 0.5e-9;
  const std::string csv = ::testing::TempDir() + "bench.csv", json = ::testing::TempDir() + "bench.json";
  {
    std::ofstream c(csv), j(json);
    c << "# bench collectives\nbackend,collective,ranks,bytes,time_us,#wrong\n";
    j << "{\"backend\":\"ring\",\"ranks\":4,\"rows\":[";
    bool first = true;
    for (double bytes = 1024; bytes <= 16 * kMiB; bytes *= 4) {
      const double t =
          AlphaBeta{alpha, beta, 0}.time_s(cost_coefficients(Collective::AllReduce, Algorithm::Ring, 4, bytes));
      c << "ring,all_reduce,4," << bytes << "," << t * 1e6 << ",0\n";
      j << (first ? "" : ",") << "{\"op\":\"allreduce\",\"size_bytes\":" << bytes << ",\"median_ms\":" << t * 1e3
        << "}";
      first = false;
    }
    j << "]}\n";
  }
  for (const auto& path : {csv, json}) {
    const CommModel m = fit_bench_rows(read_bench_rows(path), path);
    const ModelEntry* e = m.find("ring");
    ASSERT_NE(e, nullptr) << path;
    EXPECT_NEAR(e->fit.model.alpha_s / alpha, 1.0, 1e-6) << path;
    EXPECT_NEAR(e->fit.model.beta_s_per_byte / beta, 1.0, 1e-6) << path;
    // Round trip through the model file.
    const CommModel back = comm_model_from_json(to_json(m));
    EXPECT_NEAR(back.time_s("ring", Collective::AllReduce, 4, kMiB), m.time_s("ring", Collective::AllReduce, 4, kMiB),
                1e-15);
  }
}

// Two layers (depth 1): params in ready order b1, W1, b0, W0.
StepProfile tiny_profile() {
  StepProfile p;
  p.params = model::param_layout({/*in*/ 4, /*width*/ 8, /*depth*/ 1, /*classes*/ 2});
  p.forward_s = 1e-3;
  p.backward_s = 2e-3;  // no lead time: layer 1 then layer 0, 1 ms each
  p.layer_backward_s = {1e-3, 1e-3};
  p.layer_ids = {1, 0};
  p.optimizer_s = 0.5e-3;
  p.rows_per_rank = 16;
  return p;
}

TEST(StepModel, ReadyTimesFollowTheBackwardSchedule) {
  const auto r = grad_ready_times(tiny_profile());
  ASSERT_EQ(r.size(), 4u);
  EXPECT_DOUBLE_EQ(r[0], 0.0);     // b1: start of layer 1
  EXPECT_DOUBLE_EQ(r[1], 0.5e-3);  // W1: after its dW GEMM, half of layer 1
  EXPECT_DOUBLE_EQ(r[2], 1e-3);    // b0: start of layer 0
  EXPECT_DOUBLE_EQ(r[3], 2e-3);    // W0: end (layer 0 has no dX GEMM)
}

TEST(StepModel, HandComputedStrategies) {
  const StepProfile p = tiny_profile();
  // Constant 0.4 ms per all-reduce regardless of size: easy to follow by hand.
  const AllReduceTime c = [](double) { return 0.4e-3; };
  const double compute = 1e-3 + 2e-3 + 0.5e-3;
  StepPrediction naive = predict_step(p, ddp::Strategy::Naive, c);
  EXPECT_NEAR(naive.exposed_comm_s, 1.6e-3, 1e-12);  // 4 parameters one after the other
  EXPECT_NEAR(naive.step_s, compute + 1.6e-3, 1e-12);
  StepPrediction flat = predict_step(p, ddp::Strategy::Flat, c);
  EXPECT_NEAR(flat.exposed_comm_s, 0.4e-3, 1e-12);
  EXPECT_EQ(flat.collectives, 1);
  // Overlap: b1 0->0.4, W1 0.5->0.9, b0 1.0->1.4, W0 2.0->2.4: exposed 0.4 ms past backward end (2 ms).
  StepPrediction ov = predict_step(p, ddp::Strategy::Overlap, c);
  EXPECT_NEAR(ov.exposed_comm_s, 0.4e-3, 1e-12);
  EXPECT_NEAR(ov.buckets[1].start_s, 0.5e-3, 1e-12);
  // Serialisation on the link: 1.0 ms per all-reduce -> b1 0-1, W1 1-2, b0 2-3, W0 3-4: exposed 2 ms.
  const AllReduceTime slow = [](double) { return 1e-3; };
  EXPECT_NEAR(predict_step(p, ddp::Strategy::Overlap, slow).exposed_comm_s, 2e-3, 1e-12);
  // Bucketed with a cap holding the whole gradient = one bucket launched when W0 is ready (2 ms).
  StepPrediction one = predict_step(p, ddp::Strategy::Bucketed, c, 1e9);
  EXPECT_EQ(one.collectives, 1);
  EXPECT_NEAR(one.exposed_comm_s, 0.4e-3, 1e-12);
  // The bucket plan is the trainer's (ddp::plan_buckets): same count of buckets for a small cap.
  const auto plan = ddp::plan_buckets(p.params, 64);
  EXPECT_EQ(predict_step(p, ddp::Strategy::Bucketed, c, 64).collectives, static_cast<std::int64_t>(plan.size()));
}

TEST(StepModel, AShapedLinksBusyPeriodStreamsAsOneTransfer) {
  // A token bucket: 1 KiB of burst at 1 GB/s, then 0.1 GB/s. Isolated T(S); streamed after C bytes
  // of the same busy period, T(C + S) - T(C) (step_model.hpp).
  const StepProfile p = tiny_profile();
  auto tbf = [](double bytes) { return std::min(bytes, 1024.0) / 1e9 + std::max(0.0, bytes - 1024.0) / 1e8; };
  const AllReduceTime shaped{tbf, [&](double bytes, double before) { return tbf(before + bytes) - tbf(before); }};
  double total = 0;
  for (const auto& q : p.params) total += static_cast<double>(q.count * model::kParamElementBytes);
  // Naive: one busy period, so the whole gradient costs one transfer of its bytes; flat likewise.
  EXPECT_NEAR(predict_step(p, ddp::Strategy::Naive, shaped).exposed_comm_s, tbf(total), 1e-15);
  EXPECT_NEAR(predict_step(p, ddp::Strategy::Flat, shaped).exposed_comm_s,
              tbf(static_cast<double>(model::flat_count(p.params)) * 4.0), 1e-15);
  // Overlap with constant times by hand: 0.4 ms on an idle link, 1.0 ms streamed. Ready b1 0, W1 0.5,
  // b0 1.0, W0 2.0 ms. b1 0 -> 0.4. W1 starts 0.1 ms after the link went idle, a quarter of b1's
  // busy time: three quarters of b1's bytes still count as streamed, so 1.0 ms: 0.5 -> 1.5. b0 and
  // W0 follow without a gap: 1.5 -> 2.5 -> 3.5; exposed 1.5 ms past backward's end (2 ms). With
  // b1 ready earlier than W1 by more than b1's time the bucket would be full again (next check).
  const AllReduceTime constant{[](double) { return 0.4e-3; }, [](double, double) { return 1.0e-3; }};
  const StepPrediction ov = predict_step(p, ddp::Strategy::Overlap, constant);
  ASSERT_EQ(ov.buckets.size(), 4u);
  EXPECT_NEAR(ov.buckets[0].end_s, 0.4e-3, 1e-12);
  EXPECT_NEAR(ov.buckets[1].end_s, 1.5e-3, 1e-12);
  EXPECT_NEAR(ov.buckets[3].end_s, 3.5e-3, 1e-12);
  EXPECT_NEAR(ov.exposed_comm_s, 1.5e-3, 1e-12);
  // 0.05 ms on an idle link: W1 starts 0.45 ms after b1 ended, longer than b1 was busy, so it
  // starts a new busy period (0.05 ms); so do b0 and W0.
  const AllReduceTime fast{[](double) { return 0.05e-3; }, [](double, double) { return 1.0e-3; }};
  EXPECT_NEAR(predict_step(p, ddp::Strategy::Overlap, fast).comm_total_s, 4 * 0.05e-3, 1e-12);
}

TEST(StepModel, PeerLagAndTimeSlicingByHand) {
  StepProfile p = tiny_profile();
  p.peer_lag_s = 0.3e-3;  // the slowest rank is 0.3 ms behind this one
  const AllReduceTime c = [](double) { return 0.4e-3; };
  const double compute = 1e-3 + 2e-3 + 0.5e-3;
  // Blocking strategies wait for the slowest rank once, then run as before.
  EXPECT_NEAR(predict_step(p, ddp::Strategy::Naive, c).exposed_comm_s, 0.3e-3 + 1.6e-3, 1e-12);
  EXPECT_NEAR(predict_step(p, ddp::Strategy::Flat, c).step_s, compute + 0.3e-3 + 0.4e-3, 1e-12);
  // Overlap: every gradient is ready 0.3 ms later on the slowest rank:
  // b1 0.3->0.7, W1 0.8->1.2, b0 1.3->1.7, W0 2.3->2.7: exposed 0.7 ms past backward end.
  StepPrediction ov = predict_step(p, ddp::Strategy::Overlap, c);
  EXPECT_NEAR(ov.buckets[1].start_s, 0.8e-3, 1e-12);
  EXPECT_NEAR(ov.exposed_comm_s, 0.7e-3, 1e-12);
  // Time-sliced node: nothing starts before backward ends (2 ms) plus the lag, then one after the
  // other: 2.3->2.7->3.1->3.5->3.9, exposed 1.9 ms = lag + 4 x 0.4 ms, whatever the overlap.
  p.time_sliced = true;
  ov = predict_step(p, ddp::Strategy::Overlap, c);
  EXPECT_NEAR(ov.buckets[0].start_s, 2.3e-3, 1e-12);
  EXPECT_NEAR(ov.exposed_comm_s, 1.9e-3, 1e-12);
  EXPECT_NEAR(predict_step(p, ddp::Strategy::Bucketed, c, 1e9).exposed_comm_s, 0.3e-3 + 0.4e-3, 1e-12);
  // Blocking strategies are unchanged by time slicing (they never overlapped).
  EXPECT_NEAR(predict_step(p, ddp::Strategy::Naive, c).exposed_comm_s, 0.3e-3 + 1.6e-3, 1e-12);
  // Without lag, time slicing alone turns overlap into naive's exposure (same collectives, serial).
  p.peer_lag_s = 0;
  EXPECT_NEAR(predict_step(p, ddp::Strategy::Overlap, c).exposed_comm_s,
              predict_step(p, ddp::Strategy::Naive, c).exposed_comm_s, 1e-12);
}

TEST(PeerArrival, ArrivalIsBackwardEndSinceThePreviousLossSync) {
  using core::Event;
  using core::EventKind;
  auto ev = [](EventKind k, std::int64_t step, std::int64_t b_ms, std::int64_t e_ms) {
    Event e;
    e.kind = k;
    e.step = step;
    e.begin_ns = b_ms * 1000000;
    e.end_ns = e_ms * 1000000;
    return e;
  };
  PeerArrival a;
  // Step 0: loss sync ends at 10 ms (reference only: no predecessor, never kept).
  a.add({ev(EventKind::Backward, 0, 2, 8), ev(EventKind::LossSync, 0, 9, 10)}, 0, true);
  EXPECT_EQ(a.kept(), 0);
  // Step 1 with two micro-steps: the LAST backward end (25 ms) counts: arrival 15 ms. Not kept.
  a.add({ev(EventKind::Backward, 1, 12, 18), ev(EventKind::Backward, 1, 19, 25), ev(EventKind::LossSync, 1, 26, 27)}, 1,
        false);
  EXPECT_EQ(a.kept(), 0);
  // Step 2 kept: backward ends at 40, previous sync ended at 27: 13 ms. Events of other steps ignored.
  a.add({ev(EventKind::Backward, 1, 0, 99), ev(EventKind::Backward, 2, 30, 40), ev(EventKind::LossSync, 2, 41, 42)}, 2,
        true);
  ASSERT_EQ(a.kept(), 1);
  EXPECT_DOUBLE_EQ(a.arrivals_ms()[0], 13.0);
  // A step whose events were dropped (full event log) is still kept, as unknown, so every rank
  // keeps the same steps: step 3 lost its backward, step 4 its loss sync (so step 5 has no
  // reference).
  a.add({ev(EventKind::LossSync, 3, 50, 51)}, 3, true);
  a.add({ev(EventKind::Backward, 4, 52, 60)}, 4, true);
  a.add({ev(EventKind::Backward, 5, 62, 70), ev(EventKind::LossSync, 5, 71, 72)}, 5, true);
  a.add({ev(EventKind::Backward, 6, 73, 80), ev(EventKind::LossSync, 6, 81, 82)}, 6, true);
  ASSERT_EQ(a.kept(), 5);
  EXPECT_EQ(a.arrivals_ms()[1], -1.0);        // step 3: no backward
  EXPECT_DOUBLE_EQ(a.arrivals_ms()[2], 9.0);  // step 4: 60 - 51
  EXPECT_EQ(a.arrivals_ms()[3], -1.0);        // step 5: no sync end in step 4
  EXPECT_DOUBLE_EQ(a.arrivals_ms()[4], 8.0);  // step 6: 80 - 72
  // Lag: per step the latest arrival minus own, averaged over the steps known here: (2 + 0 + 4) / 3.
  EXPECT_DOUBLE_EQ(mean_lag_ms({10, 12, 6}, {12, 12, 10}), 2.0);
  EXPECT_DOUBLE_EQ(mean_lag_ms({10, -1, 12, 6}, {12, 9, 12, 10}), 2.0);
  EXPECT_DOUBLE_EQ(mean_lag_ms({-1}, {-1}), 0.0);
  EXPECT_DOUBLE_EQ(mean_lag_ms({}, {}), 0.0);
  EXPECT_THROW(mean_lag_ms({1}, {}), std::exception);
}

TEST(StepModel, BestBucketBalancesLatencyAndTail) {
  // 8 equal layers of 1 MiB weights: α = 1 ms dominates, so one big bucket wins over many small.
  StepProfile p;
  p.params = model::param_layout({512, 512, 7, 512});
  p.backward_s = 8e-3;
  fill_layer_times_from_params(p);
  p.rows_per_rank = 32;
  const AllReduceTime lat = [](double bytes) { return 1e-3 + bytes * 1e-12; };
  const StepPrediction best = best_bucket(p, lat);
  EXPECT_EQ(best.collectives, 1);
  // best_bucket is the minimum of bucket_sweep (caps ascending, the last the whole gradient).
  const auto sweep = bucket_sweep(p, lat);
  ASSERT_GE(sweep.size(), 2u);
  for (std::size_t i = 1; i < sweep.size(); ++i) EXPECT_GT(sweep[i].bucket_bytes, sweep[i - 1].bucket_bytes);
  for (const auto& s : sweep) EXPECT_GE(s.step_s, best.step_s * 0.999);
  // Pure bandwidth (no α): smaller buckets hide more, so the best has several buckets.
  const AllReduceTime bw = [](double bytes) { return bytes * 1e-9; };
  EXPECT_GT(best_bucket(p, bw).collectives, 1);
}

TEST(Scaling, WeakAndStrongEfficiencyByHand) {
  ScalingInput in;
  in.profile = tiny_profile();
  in.global_batch = 16;
  in.strategy = ddp::Strategy::Flat;
  in.allreduce = [](int ranks, double) { return ranks > 1 ? 0.35e-3 : 0.0; };
  const auto weak = predict_weak_scaling(in, 4);
  ASSERT_EQ(weak.size(), 3u);  // 1, 2, 4
  const double t1 = 3.5e-3;
  EXPECT_NEAR(weak[0].step_s, t1, 1e-12);
  // 2 ranks: + 0.35 ms gradient all-reduce + 0.35 ms loss all-reduce (latency).
  EXPECT_NEAR(weak[1].step_s, t1 + 0.7e-3, 1e-12);
  EXPECT_NEAR(weak[1].efficiency, t1 / (t1 + 0.7e-3), 1e-12);
  const auto strong = predict_strong_scaling(in, 2);
  // 2 ranks, 8 rows: forward/backward halve (1.5 ms), optimizer stays 0.5 ms, + 0.7 ms comm.
  EXPECT_NEAR(strong[1].step_s, 1.5e-3 + 0.5e-3 + 0.7e-3, 1e-12);
  EXPECT_NEAR(strong[1].efficiency, t1 / (2 * strong[1].step_s), 1e-12);
}

// A small model recorded at 2 ranks (in 32, width 32, depth 2, 4 classes; global batch 64), no runs yet.
RunRecord two_rank_record() {
  RunRecord rec;
  rec.model = {32, 32, 2, 4};
  rec.global_batch = 64;
  rec.ranks = 2;
  return rec;
}

TEST(Analysis, PhasesSumToStepAndReportIsConsistent) {
  RunRecord rec = two_rank_record();
  rec.backend = "mpi";
  StrategyRun run;
  run.strategy = ddp::Strategy::Flat;
  for (int i = 0; i < 3; ++i) {
    StepStats s;
    s.data_ms = 0.1;
    s.forward_ms = 1.0 + i;
    s.backward_ms = 2.0;
    s.comm_exposed_ms = 0.3;
    s.comm_total_ms = 0.3;
    s.comm_busy_ms = 0.3;  // one blocking collective: nothing queued
    s.loss_sync_ms = 0.05;
    s.optimizer_ms = 0.2;
    s.step_ms = s.data_ms + s.forward_ms + s.backward_ms + s.comm_exposed_ms + s.loss_sync_ms + s.optimizer_ms + 0.01;
    s.collectives = 1;
    s.comm_bytes = 4 * 1000;
    run.steps.push_back(s);
  }
  rec.runs.push_back(run);
  CommModel m;
  ModelEntry e;
  e.backend = "mpi";
  e.fit.model = {10e-6, 1e-10, 0};
  m.entries.push_back(e);
  const Analysis a = analyze(rec, m, AnalyzeOptions{});
  const auto j = to_json(a);
  const auto& b = j.at("breakdown");
  EXPECT_NEAR(b.at("phase_sum_ms").get<double>() + b.at("untimed_ms").get<double>(), b.at("step_ms").get<double>(),
              1e-9);
  EXPECT_NEAR(b.at("untimed_ms").get<double>(), 0.01, 1e-9);
  EXPECT_NEAR(b.at("forward_ms").get<double>(), 2.0, 1e-12);  // mean of 1, 2, 3
  EXPECT_EQ(j.at("scaling").at("strong").size(), 11u);        // 1, 2, ..., 1024
  EXPECT_NEAR(j.at("scaling").at("weak")[0].at("efficiency").get<double>(), 1.0, 1e-12);
  EXPECT_FALSE(format_report(a).empty());
  EXPECT_TRUE(j.at("warnings").empty());  // node layout unknown: no verdict
  EXPECT_EQ(j.at("scaling").at("strategy").get<std::string>(), "bucketed 25 MiB");
  // The scaling strategy is the user's: naive at 2 ranks pays the per-parameter all-reduces
  // after backward, so it is never faster than bucketed with overlap.
  AnalyzeOptions naive_opt;
  naive_opt.scaling_strategy = ddp::Strategy::Naive;
  const auto jn = to_json(analyze(rec, m, naive_opt));
  EXPECT_EQ(jn.at("scaling").at("strategy").get<std::string>(), "naive");
  EXPECT_GE(jn.at("scaling").at("weak")[1].at("step_ms").get<double>(),
            j.at("scaling").at("weak")[1].at("step_ms").get<double>());
  EXPECT_GT(jn.at("scaling").at("weak")[1].at("exposed_comm_ms").get<double>(), 0.0);
  // Oversubscription is named: 4 ranks x 1 compute thread on 2 cores; not 2 ranks, not 16 cores.
  rec.ranks_per_node = 4;
  rec.threads = 1;
  rec.cores_per_node = 2;
  const Analysis over_a = analyze(rec, m, AnalyzeOptions{});
  const auto over = to_json(over_a);
  ASSERT_EQ(over.at("warnings").size(), 1u);
  EXPECT_NE(over.at("warnings")[0].get<std::string>().find("oversubscribed: 4 ranks"), std::string::npos);
  EXPECT_NE(format_report(over_a).find("warning: oversubscribed"), std::string::npos);
  // 2 ranks x 1 thread on 2 cores: not time-sliced, but no core is left for the communication
  // threads; 1 rank on 2 cores, or 4 ranks on 16: nothing to say.
  rec.ranks_per_node = 2;
  const auto spare = to_json(analyze(rec, m, AnalyzeOptions{})).at("warnings");
  ASSERT_EQ(spare.size(), 1u);
  EXPECT_NE(
      spare[0].get<std::string>().find("no spare core: 2 ranks x (1 compute + 1 communication thread) on 2 cores"),
      std::string::npos);
  rec.ranks_per_node = 1;
  EXPECT_TRUE(to_json(analyze(rec, m, AnalyzeOptions{})).at("warnings").empty());
  rec.ranks_per_node = 4;
  rec.cores_per_node = 16;
  EXPECT_TRUE(to_json(analyze(rec, m, AnalyzeOptions{})).at("warnings").empty());
  // The measured peer lag is exposed in the predictions (flat: lag + T), and on the time-sliced
  // node (4 ranks on 2 cores) too; it round-trips through the record.
  rec.runs[0].peer_lag_ms = 1.5;
  const double flat_ms = j.at("strategies")[0].at("predicted").at("step_ms").get<double>();
  const Analysis lagged_a = analyze(rec, m, AnalyzeOptions{});
  const auto lagged = to_json(lagged_a);
  EXPECT_NEAR(lagged.at("strategies")[0].at("predicted").at("step_ms").get<double>(), flat_ms + 1.5, 1e-9);
  EXPECT_DOUBLE_EQ(lagged.at("breakdown").at("peer_lag_ms").get<double>(), 1.5);
  EXPECT_NE(format_report(lagged_a).find("finishes backward 1.500 ms later"), std::string::npos);
  // Scaling assumes dedicated cores and no straggler: unchanged by this node's lag.
  EXPECT_DOUBLE_EQ(lagged.at("scaling").at("weak")[1].at("step_ms").get<double>(),
                   j.at("scaling").at("weak")[1].at("step_ms").get<double>());
  // A user network with a local reduction rate: the reduction (γ = 1/rate per byte reduced) comes on
  // top of the link. Flat at 2 ranks reduces half of the gradient on each rank: + S/2 · γ per step
  // (the loss all-reduce stays at its measured time, which is larger than its modelled one here).
  AnalyzeOptions link;
  link.link_gbps = 100;
  link.latency_us = 5;
  link.scaling_strategy = ddp::Strategy::Flat;
  AnalyzeOptions link_reduce = link;
  link_reduce.reduce_gbytes_s = 10;
  const auto without = to_json(analyze(rec, m, link)), with = to_json(analyze(rec, m, link_reduce));
  // flat all-reduces the whole flat buffer, alignment padding included (model/param_layout.hpp).
  const double grad_bytes = 4.0 * static_cast<double>(model::flat_count(model::param_layout(rec.model)));
  EXPECT_NEAR(with.at("scaling").at("weak")[1].at("step_ms").get<double>() -
                  without.at("scaling").at("weak")[1].at("step_ms").get<double>(),
              1e3 * 0.5 * grad_bytes * 1e-9 / 10.0, 1e-12);
  EXPECT_NE(with.at("scaling").at("network").get<std::string>().find("local reduction 10 GB/s"), std::string::npos);
  EXPECT_NE(without.at("scaling").at("network").get<std::string>().find("not counted"), std::string::npos);
  // Round trip of the run record.
  const RunRecord back = run_record_from_json(to_json(rec));
  EXPECT_DOUBLE_EQ(back.runs.at(0).peer_lag_ms, 1.5);
  auto bad = to_json(rec);
  bad["runs"][0]["peer_lag_ms"] = -1.0;
  EXPECT_THROW(run_record_from_json(bad), core::UsageError);
  EXPECT_EQ(back.ranks_per_node, 4);
  EXPECT_EQ(back.cores_per_node, 16);
  EXPECT_EQ(back.runs.at(0).steps.size(), 3u);
  EXPECT_DOUBLE_EQ(back.runs[0].mean().step_ms, rec.runs[0].mean().step_ms);
}

// The JSON of `analyze --json` is an interface (jobs/aggregate.py and tests/perf read it): every
// object keeps exactly these fields, and the text report shows the same numbers as the JSON.
TEST(Analysis, JsonKeepsItsFieldsAndTheReportItsNumbers) {
  RunRecord rec = two_rank_record();
  rec.source = "unit test";
  for (const ddp::Strategy strategy : {ddp::Strategy::Flat, ddp::Strategy::Bucketed}) {
    StrategyRun run;
    run.strategy = strategy;
    run.bucket_mb = strategy == ddp::Strategy::Bucketed ? 0.5 : 0.0;
    StepStats st;
    st.step_ms = 4.0;
    st.forward_ms = 1.0;
    st.backward_ms = 2.0;
    st.comm_total_ms = 0.5;
    st.comm_busy_ms = 0.4;
    st.comm_queued_ms = 0.1;
    st.comm_exposed_ms = 0.25;
    st.collectives = 3;
    st.comm_bytes = 4096;
    run.steps = {st, st};
    rec.runs.push_back(run);
  }
  CommModel m;
  m.source = "hand-made";
  ModelEntry e;
  e.backend = "mpi";
  e.fit.model = {10e-6, 1e-10, 0};
  e.fit.regimes = {{0.0, {10e-6, 1e-10, 0}}, {65536.0, {20e-6, 2e-10, 0}}};
  m.entries.push_back(e);
  const Analysis a = analyze(rec, m, AnalyzeOptions{});
  const nlohmann::json j = to_json(a);
  auto keys = [](const nlohmann::json& o) {
    std::set<std::string> k;
    for (const auto& [key, value] : o.items()) k.insert(key);
    return k;
  };
  using Keys = std::set<std::string>;
  EXPECT_EQ(keys(j), (Keys{"type", "source", "model_source", "burst_credit", "config", "comm_model", "warnings",
                           "strategies", "max_abs_error_pct", "breakdown", "bottleneck", "predicted_strategies",
                           "bucket_sweep", "best_bucket", "scaling", "model_warning"}));
  EXPECT_EQ(j.at("type"), "microddp_analysis");
  EXPECT_EQ(keys(j.at("config")), (Keys{"in_dim", "width", "depth", "classes", "global_batch", "ranks", "threads",
                                        "ranks_per_node", "cores_per_node", "comm", "optimizer", "device",
                                        "compute", "precision"}));
  EXPECT_EQ(keys(j.at("comm_model")[0]),
            (Keys{"backend", "collective", "algorithm", "alpha_us", "beta_ns_per_byte", "r2", "max_rel_residual",
                  "line_rms_rel_residual", "rms_rel_residual", "regimes", "warning"}));
  // comm_busy_ms / comm_queued_ms: the overlap metric's denominator and the queueing beside it.
  const Keys breakdown{"step_ms",         "data_ms",       "forward_ms",        "backward_ms",
                       "exposed_comm_ms", "loss_sync_ms",  "optimizer_ms",      "untimed_ms",
                       "phase_sum_ms",    "comm_total_ms", "comm_busy_ms",      "comm_queued_ms",
                       "collectives",     "comm_bytes",    "comm_overhead_pct", "overlap_pct"};
  Keys reference_breakdown = breakdown;
  reference_breakdown.insert({"strategy", "peer_lag_ms"});
  EXPECT_EQ(keys(j.at("breakdown")), reference_breakdown);
  EXPECT_EQ(j.at("breakdown").at("strategy"), "bucketed");  // the overlapping run is the reference
  ASSERT_EQ(j.at("strategies").size(), 2u);
  EXPECT_EQ(j.at("strategies")[0].at("strategy"), "flat");
  EXPECT_EQ(keys(j.at("strategies")[0]),
            (Keys{"strategy", "bucket_mb", "steps", "measured", "peer_lag_ms", "predicted", "error_pct"}));
  EXPECT_EQ(keys(j.at("strategies")[0].at("measured")), breakdown);
  EXPECT_EQ(keys(j.at("strategies")[0].at("predicted")),
            (Keys{"step_ms", "exposed_comm_ms", "comm_total_ms", "collectives", "overlap_pct", "model_warning"}));
  EXPECT_EQ(keys(j.at("bottleneck")),
            (Keys{"verdict", "compute_pct", "communication_pct", "memory_pct", "host_pct", "gemm_gflops",
                  "peak_gflops", "peak_source", "optimizer_gbytes_s", "memory_reference_gbytes_s",
                  "memory_reference_source", "comm_algbw_gbytes_s", "reason"}));
  ASSERT_EQ(j.at("predicted_strategies").size(), ddp::kStrategies.size());
  for (std::size_t i = 0; i < ddp::kStrategies.size(); ++i) {
    EXPECT_EQ(j.at("predicted_strategies")[i].at("strategy"), ddp::strategy_name(ddp::kStrategies[i]));
    EXPECT_EQ(keys(j.at("predicted_strategies")[i]),
              (Keys{"strategy", "step_ms", "exposed_comm_ms", "collectives", "model_warning"}));
  }
  EXPECT_EQ(keys(j.at("bucket_sweep")[0]), (Keys{"bucket_mb", "step_ms", "exposed_comm_ms", "collectives"}));
  EXPECT_EQ(keys(j.at("best_bucket")),
            (Keys{"bucket_mb", "step_ms", "exposed_comm_ms", "collectives", "model_warning"}));
  EXPECT_EQ(keys(j.at("scaling")), (Keys{"network", "reduce_gbytes_s", "strategy", "global_batch", "rows_per_rank_weak",
                                         "strong", "weak", "model_warning"}));
  // The hand-made model's fit carries no quality numbers (R2 0): it is flagged next to every
  // prediction made from it (perf/link_classes.hpp fit_warning), in the JSON and the report.
  EXPECT_EQ(j.at("model_warning"), fit_warning(m.entries[0].fit));
  EXPECT_EQ(j.at("best_bucket").at("model_warning"), j.at("model_warning"));
  EXPECT_EQ(keys(j.at("scaling").at("strong")[0]),
            (Keys{"ranks", "rows_per_rank", "step_ms", "exposed_comm_ms", "efficiency", "samples_per_s"}));
  // The report prints what the JSON holds.
  const std::string report = format_report(a);
  char line[160];
  std::snprintf(line, sizeof line, "  %-10s %9.2f %12.3f %12.3f", "bucketed", 0.5,
                j.at("strategies")[1].at("measured").at("step_ms").get<double>(),
                j.at("strategies")[1].at("predicted").at("step_ms").get<double>());
  EXPECT_NE(report.find(line), std::string::npos) << line << "\n" << report;
  EXPECT_NE(report.find("2 size regimes (used for predictions)"), std::string::npos) << report;
  EXPECT_NE(report.find("Bottleneck: " + j.at("bottleneck").at("verdict").get<std::string>()), std::string::npos);
}

// A GPU run (analyze --device cuda): its phases are CUDA-event times inside the host's loss sync, so
// the verdict counts the step outside them as the host's share instead of adding the loss sync, and
// compares with the GPU's references, never the CPU's per-thread peak. Numbers by hand.
TEST(Analysis, GpuRunIsJudgedAgainstTheGpusReferences) {
  RunRecord rec = two_rank_record();  // 32-wide, depth 2, 4 classes, 64 rows over 2 ranks
  rec.device = "cuda";
  rec.compute = "cuda:0 (test GPU)";
  rec.precision = "bf16";
  rec.ranks_per_node = 64;  // would be "time sliced" on 1 core: not on a GPU
  rec.cores_per_node = 1;
  EXPECT_FALSE(rec.time_sliced());
  EXPECT_FALSE(rec.no_spare_core());
  StepStats st;
  st.step_ms = 10.0;
  st.forward_ms = 1.0;
  st.backward_ms = 2.0;
  st.comm_exposed_ms = 0.5;
  st.optimizer_ms = 0.5;
  st.loss_sync_ms = 9.0;  // contains forward, backward and the exposed wait
  Breakdown b = breakdown_of(st);
  EXPECT_DOUBLE_EQ(gpu_host_ms(st), 6.0);  // 10 - (1 + 2 + 0.5 + 0.5)
  AnalyzeOptions opt;
  opt.device_peak_gflops = 1000;
  opt.device_peak_source = "measured on cuda:0";
  opt.device_mem_gbytes_s = 2000;
  opt.device_mem_source = "a device copy";
  Verdict v = bottleneck(rec, b, opt);
  EXPECT_EQ(v.kind, "host-bound");
  EXPECT_DOUBLE_EQ(v.host_pct, 60.0);
  EXPECT_DOUBLE_EQ(v.communication_pct, 5.0);  // the exposed wait only, not the loss sync
  EXPECT_DOUBLE_EQ(v.compute_pct, 30.0);
  EXPECT_DOUBLE_EQ(v.peak_gflops, 1000.0);
  EXPECT_EQ(v.peak_source, "measured on cuda:0");
  EXPECT_DOUBLE_EQ(v.memory_gbytes_s, 2000.0);
  EXPECT_EQ(v.memory_source, "a device copy");
  EXPECT_EQ(v.reason.find("per thread"), std::string::npos) << v.reason;
  // Compute-heavy: compute-bound, against the GPU's peak.
  st.forward_ms = 3.0;
  st.backward_ms = 6.0;
  st.optimizer_ms = 0.25;
  st.comm_exposed_ms = 0.25;
  b = breakdown_of(st);
  v = bottleneck(rec, b, opt);
  EXPECT_EQ(v.kind, "compute-bound");
  EXPECT_NE(v.reason.find("GFLOP/s peak: measured on cuda:0"), std::string::npos) << v.reason;
  // Without a GPU peak (a GPU record analysed on a CPU, nothing given): unknown, not a CPU's.
  v = bottleneck(rec, b, AnalyzeOptions{});
  EXPECT_DOUBLE_EQ(v.peak_gflops, 0.0);
  EXPECT_EQ(v.peak_source, "unknown");
  // The same numbers as a CPU run: the loss sync is a phase of its own and the peak is per thread.
  rec.device = "cpu";
  rec.threads = 2;
  v = bottleneck(rec, b, opt);
  EXPECT_DOUBLE_EQ(v.peak_gflops, 2 * opt.peak_gflops_per_thread);
  EXPECT_NE(v.peak_source.find("per thread x 2 thread(s)"), std::string::npos) << v.peak_source;
  EXPECT_DOUBLE_EQ(v.communication_pct, 100.0 * (0.25 + 9.0) / 10.0);
  // The device survives a record's round trip; an unknown one is refused.
  rec.device = "cuda";
  rec.runs.push_back({});
  rec.runs[0].steps = {st};
  const RunRecord back = run_record_from_json(to_json(rec));
  EXPECT_EQ(back.device, "cuda");
  EXPECT_EQ(back.compute, "cuda:0 (test GPU)");
  EXPECT_EQ(back.precision, "bf16");
  nlohmann::json bad = to_json(rec);
  bad["config"]["device"] = "tpu";
  EXPECT_THROW(run_record_from_json(bad), core::UsageError);
  // The analysis' JSON and report say the same: overhead = exposed / step (2.5%), the host's share.
  rec.runs[0].strategy = ddp::Strategy::Flat;
  CommModel m;
  m.source = "hand-made";
  ModelEntry e;
  e.backend = "mpi";
  e.fit.model = {10e-6, 1e-10, 0};
  m.entries.push_back(e);
  const Analysis a = analyze(rec, m, opt);
  EXPECT_DOUBLE_EQ(to_json(a).at("breakdown").at("comm_overhead_pct").get<double>(), 2.5);
  const std::string report = format_report(a);
  EXPECT_NE(report.find("2 rank(s) x 1 GPU (device cuda)"), std::string::npos) << report;
  EXPECT_NE(report.find("communication overhead 2.5% of the step"), std::string::npos) << report;
  EXPECT_NE(report.find("the host's share, step - device phases: 0.500 ms"), std::string::npos) << report;
}

TEST(RunRecord, UnknownStrategyIsAUsageError) {
  RunRecord rec;
  rec.model = {8, 8, 1, 2};
  rec.global_batch = 8;
  StrategyRun run;
  run.steps.push_back(StepStats{});
  rec.runs.push_back(run);
  auto j = to_json(rec);
  EXPECT_EQ(run_record_from_json(j).runs.at(0).strategy, ddp::Strategy::Naive);
  j["runs"][0]["strategy"] = "telepathy";
  try {
    run_record_from_json(j);
    FAIL() << "accepted";
  } catch (const core::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'telepathy'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace microddp::perf
