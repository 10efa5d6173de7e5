// test_config_json.cpp — the configuration in JSON records (perf/config_json.hpp), no MPI:
//   * every field of ddp::train_config_fields() is written under its name and read back equal,
//     also with each field moved off its default (so a field missing on either side shows);
//   * absent keys keep the configuration's values (records written before a field existed);
//   * a value of the wrong JSON type throws nlohmann's exception, an invalid NaN policy a
//     UsageError naming the field;
//   * a metrics file's summary (what `train --metrics` writes) becomes a run record with the
//     configuration's model shape, batch, optimizer, strategy and bucket size.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "ddp/train_config_fields.hpp"
#include "perf/analysis.hpp"
#include "perf/config_json.hpp"
#include "support/config_field_values.hpp"

namespace microddp::perf {
namespace {

TEST(ConfigJson, EveryFieldRoundTrips) {
  const ddp::TrainConfig base;
  const nlohmann::json j = train_config_to_json(base);
  EXPECT_EQ(j.size(), ddp::train_config_fields().size());
  for (const auto& f : ddp::train_config_fields()) {
    EXPECT_TRUE(j.contains(std::string(f.name))) << f.name;
    const ddp::TrainConfig changed = microddp::testing::with_field_changed(f, base);
    ddp::TrainConfig read;  // defaults: only the JSON can make `f` equal to `changed`
    train_config_from_json(train_config_to_json(changed), read);
    for (const auto& g : ddp::train_config_fields()) {
      EXPECT_TRUE(ddp::field_equal(g, read, changed))
          << "with " << f.name << " changed, " << g.name << " read back as " << ddp::field_text(g, read);
    }
  }
}

TEST(ConfigJson, AbsentKeysKeepValuesAndBadValuesAreRefused) {
  ddp::TrainConfig c;
  c.model.width = 77;
  train_config_from_json(nlohmann::json{{"depth", 3}}, c);
  EXPECT_EQ(c.model.width, 77);
  EXPECT_EQ(c.model.depth, 3);
  EXPECT_THROW(train_config_from_json(nlohmann::json{{"width", "wide"}}, c), nlohmann::json::exception);
  EXPECT_THROW(train_config_from_json(nlohmann::json{{"nesterov", 3}}, c), nlohmann::json::exception);
  try {
    train_config_from_json(nlohmann::json{{"on_nan", "ignore"}}, c);
    ADD_FAILURE() << "on_nan 'ignore' accepted";
  } catch (const core::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("on_nan"), std::string::npos) << e.what();
  }
}

TEST(ConfigJson, MetricsSummaryBecomesARunRecord) {
  ddp::TrainConfig cfg;
  cfg.model = model::MlpConfig{12, 32, 3, 4};
  cfg.global_batch = 40;
  cfg.strategy = ddp::Strategy::Bucketed;
  cfg.sync_options.bucket_mb = 2.5;
  cfg.optimizer.name = "sgd";
  nlohmann::json summary{{"type", "summary"}};
  summary["config"] = train_config_to_json(cfg);
  summary["config"].update({{"comm", "ring"}, {"ranks", 2}, {"threads", 1}});
  const nlohmann::json step{{"type", "step"}, {"step", 0}, {"step_ms", 2.0}, {"collectives", 3}};
  const std::string path =
      (std::filesystem::temp_directory_path() / ("mddp_cfgjson_" + std::to_string(::getpid()) + ".jsonl")).string();
  {
    std::ofstream out(path);
    out << step.dump() << "\n" << step.dump() << "\n" << summary.dump() << "\n";
  }
  const RunRecord r = run_record_from_metrics(path);
  std::remove(path.c_str());
  EXPECT_EQ(r.model.in_dim, 12);
  EXPECT_EQ(r.model.width, 32);
  EXPECT_EQ(r.model.depth, 3);
  EXPECT_EQ(r.model.classes, 4);
  EXPECT_EQ(r.global_batch, 40);
  EXPECT_EQ(r.optimizer, "sgd");
  EXPECT_EQ(r.backend, "ring");
  EXPECT_EQ(r.ranks, 2);
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].strategy, ddp::Strategy::Bucketed);
  EXPECT_EQ(r.runs[0].bucket_mb, 2.5);
}

}  // namespace
}  // namespace microddp::perf
