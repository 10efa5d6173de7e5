// test_link_classes.cpp — the α-β model per link class (perf/link_classes.hpp) and fit quality:
//   * a cliff near the top of a sweep (two sizes above it) becomes its own size regime, and the
//     one-line fit of the same data is flagged as poor;
//   * flat ring and hier predictions equal the closed forms of the header on hand-chosen (α, β);
//   * fit_link_classes takes each class from its own bench rows (ring preferred);
//   * a poor fit's warning reaches every prediction that uses it (JSON), and only those.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "perf/alpha_beta.hpp"
#include "perf/link_classes.hpp"

namespace microddp::perf {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double ring_time(int n, double bytes, double alpha, double beta) { return 2.0 * (n - 1) * (alpha + bytes / n * beta); }

// The Zen 5 curve, np 2: ~5 GB/s up to 16 MiB, 0.37 GB/s from 32 MiB, sweep to 64 MiB.
std::vector<Sample> cliff_sweep() {
  std::vector<Sample> s;
  for (double b = 4; b <= 64 * kMiB; b *= 2) {
    const double beta = b <= 16 * kMiB ? 1.0 / 5e9 : 1.0 / 0.37e9;
    s.push_back({2, b, ring_time(2, b, 5e-6, beta)});
  }
  return s;
}

TEST(FitQuality, ACliffNearTheTopIsARegime) {
  const std::vector<Sample> s = cliff_sweep();
  const FitResult f = fit_alpha_beta_regimes(Collective::AllReduce, Algorithm::Ring, s);
  ASSERT_GE(f.regimes.size(), 2u);
  EXPECT_GT(f.regimes.back().from_bytes, 16 * kMiB);  // the cut lies in the cliff
  EXPECT_LT(f.regimes.back().from_bytes, 32 * kMiB);
  EXPECT_LT(f.max_rel_residual, 0.01);
  EXPECT_TRUE(fit_warning(f).empty()) << fit_warning(f);
  const double at64 =
      f.model_for(64 * kMiB).time_s(cost_coefficients(Collective::AllReduce, Algorithm::Ring, 2, 64 * kMiB));
  EXPECT_NEAR(at64 / ring_time(2, 64 * kMiB, 5e-6, 1.0 / 0.37e9), 1.0, 0.01);
  // One line through the same data: what the issue saw, now flagged.
  const FitResult line = fit_alpha_beta(Collective::AllReduce, Algorithm::Ring, s);
  EXPECT_GT(line.max_rel_residual, kPoorFitMaxRelResidual);
  EXPECT_FALSE(fit_warning(line).empty());
}

TEST(FitQuality, AStraightLineIsNotCut) {
  std::vector<Sample> s;
  for (double b = 4; b <= 64 * kMiB; b *= 2) s.push_back({2, b, ring_time(2, b, 5e-6, 1.0 / 5e9)});
  const FitResult f = fit_alpha_beta_regimes(Collective::AllReduce, Algorithm::Ring, s);
  EXPECT_TRUE(f.regimes.empty());
  EXPECT_TRUE(fit_warning(f).empty());
}

LinkClassModel hand_model() {
  LinkClassModel m;
  m.intra.model = AlphaBeta{1e-6, 0.1e-9, 0};  // shared memory: 1 us, 10 GB/s
  m.inter.model = AlphaBeta{50e-6, 8e-9, 0};   // 1 Gbit/s: 50 us, 0.125 GB/s
  m.intra.r2 = m.inter.r2 = 1.0;
  return m;
}

TEST(LinkClasses, ClosedForms) {
  const LinkClassModel m = hand_model();
  const double S = 64 * kMiB;
  // 2 nodes x 2 ranks: the ring's 6 steps of S/4 wait for the network; hier: 2 node-local phases of
  // one step of S/2 each, and a 2-rank ring whose two flows share each node's link.
  EXPECT_NEAR(flat_ring_all_reduce_s(m, 2, 2, S), 6 * (50e-6 + S / 4 * 8e-9), 1e-12);
  EXPECT_NEAR(hier_all_reduce_s(m, 2, 2, S), 2 * (1e-6 + S / 2 * 0.1e-9) + 2 * 50e-6 + S * 8e-9, 1e-12);
  // One node: both intra only; hier has no cross phase.
  EXPECT_NEAR(flat_ring_all_reduce_s(m, 1, 4, S), 6 * (1e-6 + S / 4 * 0.1e-9), 1e-12);
  EXPECT_NEAR(hier_all_reduce_s(m, 1, 4, S), 2 * (3 * 1e-6 + 0.75 * S * 0.1e-9), 1e-12);
  // One rank per node: hier is the ring over nodes.
  EXPECT_NEAR(hier_all_reduce_s(m, 4, 1, S), flat_ring_all_reduce_s(m, 4, 1, S), 1e-12);
  // The β-bound ratio of the header: 1.5 at 2 x 2 (to within the node-local phases).
  const double ratio = flat_ring_all_reduce_s(m, 2, 2, S) / hier_all_reduce_s(m, 2, 2, S);
  EXPECT_GT(ratio, 1.4);
  EXPECT_LT(ratio, 1.5);
}

TEST(LinkClasses, FitsEachClassFromItsRows) {
  std::vector<BenchRow> intra, inter;
  for (double b = 1024; b <= 16 * kMiB; b *= 4) {
    intra.push_back({"ring", "all_reduce", 2, b, ring_time(2, b, 1e-6, 0.1e-9)});
    intra.push_back({"mpi", "all_reduce", 2, b, ring_time(2, b, 9e-6, 9e-9)});  // not the ring: ignored
    inter.push_back({"ring", "all_reduce", 2, b, ring_time(2, b, 50e-6, 8e-9)});
  }
  const LinkClassModel m = fit_link_classes(intra, "intra.csv", inter, "inter.csv");
  EXPECT_NEAR(m.intra.model.alpha_s, 1e-6, 1e-9);
  EXPECT_NEAR(m.intra.model.beta_s_per_byte, 0.1e-9, 1e-13);
  EXPECT_NEAR(m.inter.model.alpha_s, 50e-6, 1e-8);
  EXPECT_NEAR(m.inter.model.beta_s_per_byte, 8e-9, 1e-12);
  EXPECT_EQ(m.intra_source, "intra.csv (ring)");
  EXPECT_THROW(fit_link_classes({}, "empty.csv", inter, "inter.csv"), core::UsageError);
}

TEST(LinkClasses, PoorFitIsNamedNextToEveryPredictionUsingIt) {
  LinkClassModel m = hand_model();
  m.inter.r2 = 0.2;  // as if the inter-node sweep had an unmodelled cliff
  m.inter.max_rel_residual = 0.9;
  const std::vector<BenchRow> measured = {{"ring", "all_reduce", 4, 16 * kMiB, 0.9},
                                          {"hier", "all_reduce", 4, 16 * kMiB, 0.6}};
  const nlohmann::json j = compare_hier_ring(m, 2, 2, 0, measured);
  EXPECT_TRUE(j.at("inter").at("poor").get<bool>());
  EXPECT_FALSE(j.at("intra").at("poor").get<bool>());
  ASSERT_EQ(j.at("rows").size(), 1u);
  const auto& row = j.at("rows")[0];
  EXPECT_NE(row.at("model_warning").get<std::string>().find("inter poor fit"), std::string::npos);
  EXPECT_NEAR(row.at("ring_measured_ms").get<double>(), 900.0, 1e-9);
  EXPECT_EQ(row.at("use").get<std::string>(), "hier");
  EXPECT_NE(format_hier_comparison(j).find("(!)"), std::string::npos);
  // On one node nothing uses the inter-node fit.
  const nlohmann::json one = compare_hier_ring(m, 1, 4, 64 * kMiB, {});
  for (const auto& r : one.at("rows")) EXPECT_TRUE(r.at("model_warning").get<std::string>().empty());
}

}  // namespace
}  // namespace microddp::perf
