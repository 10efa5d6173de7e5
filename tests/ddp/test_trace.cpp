// test_trace.cpp — the merged Chrome trace: valid JSON with the expected events from every rank,
// and (from the recorded events) overlap really happens in `overlap` and `bucketed`: at least one
// gradient collective launches before backward ends. `naive` and `flat` launch none before.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <string>

#include "run/trace_output.hpp"
#include "comm/factory.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp {
namespace {

class Trace : public ::testing::TestWithParam<const char*> {};

TEST_P(Trace, MergedTraceIsValidAndShowsOverlap) {
  const auto& rt = microddp::testing::runtime();
  const std::string strategy = GetParam();
  ddp::TrainConfig cfg;
  cfg.model = model::MlpConfig{64, 64, 4, 3};
  cfg.global_batch = 32;
  cfg.steps = 3;
  cfg.strategy = ddp::parse_strategy(strategy);
  cfg.sync_options.bucket_mb = 20000.0 / (1 << 20);  // ~20 kB: several buckets of this model
  cfg.keep_events = true;
  cfg.layer_events = true;
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  ddp::Trainer t(cfg, *comm, *ops);
  t.setup();
  for (std::int64_t s = 0; s < cfg.steps; ++s) t.step();
  const std::string path =
      ::testing::TempDir() + "microddp_trace_" + strategy + "_np" + std::to_string(rt.size()) + ".json";
  run::write_trace(path, *comm, t.events().events(), t.sync(), t.model().params());
  if (rt.rank() != 0) return;

  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  const nlohmann::json j = nlohmann::json::parse(f);  // throws (test error) if not valid JSON
  ASSERT_TRUE(j.contains("traceEvents"));
  const auto& evs = j["traceEvents"];
  ASSERT_TRUE(evs.is_array());
  const std::int64_t per_step = t.sync().collectives_per_step();
  std::map<int, int> process_names, collectives, backward, optimizer, grad_ready, layer_bwd;
  // Per (rank, step): backward end, earliest collective launch.
  std::map<std::pair<int, std::int64_t>, double> bwd_end, first_launch;
  for (const auto& e : evs) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name"));
    const int pid = e["pid"].get<int>();
    const std::string ph = e["ph"], name = e["name"];
    if (ph == "M") {
      process_names[pid] += name == "process_name";
      continue;
    }
    ASSERT_TRUE(e.contains("ts") && e["ts"].is_number());
    ASSERT_GE(e["ts"].get<double>(), 0.0);
    const std::string cat = e.value("cat", "");
    const std::int64_t step = e["args"]["step"].get<std::int64_t>();
    if (ph == "X") {
      ASSERT_GE(e["dur"].get<double>(), 0.0);
    }
    if (cat == "collective") {
      ++collectives[pid];
      EXPECT_GT(e["args"]["bytes"].get<std::int64_t>(), 0);
    }
    if (cat == "launch") {
      auto key = std::make_pair(pid, step);
      const double ts = e["ts"].get<double>();
      if (!first_launch.count(key) || ts < first_launch[key]) first_launch[key] = ts;
    }
    if (cat == "backward") {
      ++backward[pid];
      bwd_end[{pid, step}] = e["ts"].get<double>() + e["dur"].get<double>();
    }
    optimizer[pid] += cat == "optimizer";
    grad_ready[pid] += cat == "grad_ready";
    layer_bwd[pid] += cat == "layer_backward";
  }
  int launched_early = 0;
  for (int r = 0; r < rt.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(process_names[r], 1);
    EXPECT_EQ(collectives[r], cfg.steps * per_step);
    EXPECT_EQ(backward[r], cfg.steps);
    EXPECT_EQ(optimizer[r], cfg.steps);
    EXPECT_EQ(grad_ready[r], cfg.steps * static_cast<std::int64_t>(t.model().params().size()));
    EXPECT_EQ(layer_bwd[r], cfg.steps * t.model().num_layers());
    // The trace numbers steps as train prints them: 1 .. steps.
    for (std::int64_t s = 1; s <= cfg.steps; ++s) launched_early += first_launch.at({r, s}) < bwd_end.at({r, s});
  }
  if (strategy == "overlap" || strategy == "bucketed") {
    EXPECT_GT(launched_early, 0) << "no collective launched before backward ended";
    // The same fact straight from rank 0's event log: its first bucket launches inside backward.
    std::int64_t bwd_end_ns = 0, first_launch_ns = INT64_MAX;
    for (const auto& e : t.events().events()) {
      if (e.step != 0) continue;
      if (e.kind == core::EventKind::Backward) bwd_end_ns = e.end_ns;
      if (e.kind == core::EventKind::Collective) first_launch_ns = std::min(first_launch_ns, e.begin_ns);
    }
    EXPECT_LT(first_launch_ns, bwd_end_ns);
  } else {
    EXPECT_EQ(launched_early, 0) << strategy << " must communicate only after backward";
  }
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Strategies, Trace, ::testing::Values("naive", "flat", "overlap", "bucketed"));

}  // namespace
}  // namespace microddp
