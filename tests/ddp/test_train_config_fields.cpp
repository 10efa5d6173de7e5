// test_train_config_fields.cpp — the one table of configuration fields (ddp/train_config_fields.hpp):
//   * every row reads and writes its own member only (set(another value) changes that row's
//     value, code and text and no other row's), names are unique, and the table has one row per
//     configuration member (the structured binding in train_config_fields.cpp guards the count at
//     compile time; this checks the table against it);
//   * the rules the issue asked for: beta1, beta2, eps and nesterov must agree across ranks, be
//     stored and match on resume (the hand-written lists had missed them);
//   * codes: float32 by bit pattern, bucket MiB by the planner's rounded bytes (the one
//     conversion), strings by name;
//   * start-up agreement (2+ ranks): a configuration differing in any one `agree` field on the last
//     rank is refused on every rank with an agreed UsageError naming that field; the same
//     configuration everywhere starts.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "comm/factory.hpp"
#include "core/error.hpp"
#include "ddp/bucket_planner.hpp"
#include "ddp/train_config_fields.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "support/config_field_values.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::ddp {
namespace {

using microddp::testing::with_field_changed;

TrainConfig small_config() {
  TrainConfig c;
  c.model = model::MlpConfig{8, 16, 3, 3};
  c.global_batch = 13;
  c.steps = 4;
  c.seed = 5;
  return c;
}

TEST(ConfigFields, EveryRowOwnsItsMember) {
  const TrainConfig base = small_config();
  std::set<std::string_view> names;
  for (const auto& f : train_config_fields()) {
    EXPECT_TRUE(names.insert(f.name).second) << "duplicate field name " << f.name;
    EXPECT_EQ(find_config_field(f.name), &f);
    const TrainConfig changed = with_field_changed(f, base);
    EXPECT_FALSE(field_equal(f, base, changed)) << f.name;
    EXPECT_NE(field_code(f, base), field_code(f, changed)) << f.name;
    EXPECT_NE(field_text(f, base), field_text(f, changed)) << f.name;
    for (const auto& g : train_config_fields()) {
      if (&g != &f) {
        EXPECT_TRUE(field_equal(g, base, changed)) << "setting " << f.name << " changed " << g.name;
      }
    }
  }
  EXPECT_EQ(find_config_field("no_such_field"), nullptr);
  // One row per member of TrainConfig (less faults and the 5 nested structs), MlpConfig (4),
  // OptimizerConfig (8), LrScheduleConfig (6), GradSyncOptions (2), GradCompressionConfig (4).
  EXPECT_EQ(train_config_fields().size(), (22u - 1 - 5) + 4 + 8 + 6 + 2 + 4);
}

TEST(ConfigFields, RulesOfTheOptimizerSettings) {
  for (const char* name : {"optimizer", "lr", "beta1", "beta2", "eps", "weight_decay", "momentum", "nesterov"}) {
    const ConfigField* f = find_config_field(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(f->rules.agree && f->rules.stored && f->rules.resume) << name;
  }
  // The run may go on longer and with other buckets or another strategy after a resume.
  for (const char* name : {"steps", "bucket_mb", "first_bucket_mb", "strategy"}) {
    EXPECT_FALSE(find_config_field(name)->rules.resume) << name;
  }
  // The learning-rate plan: agreed, stored (the schedule from format version 2 on), matched on
  // resume unless --allow-changed names it; nothing else is changeable.
  for (const auto& f : train_config_fields()) {
    const bool plan = f.name == "lr" || f.name == "lr_schedule" || f.name == "warmup_steps" || f.name == "min_lr" ||
                      f.name == "decay_steps" || f.name == "lr_milestones" || f.name == "lr_gamma";
    EXPECT_EQ(f.rules.changeable, plan) << f.name;
    if (plan) {
      EXPECT_TRUE(f.rules.agree && f.rules.stored && f.rules.resume) << f.name;
      EXPECT_EQ(f.rules.since_format, f.name == "lr" ? 1 : 2) << f.name;
    }
  }
}

TEST(ConfigFields, CodesCompareAsTheRunUsesTheValue) {
  const ConfigField& lr = *find_config_field("lr");
  const ConfigField& bucket = *find_config_field("bucket_mb");
  TrainConfig a, b;
  a.optimizer.lr = 0.1f;
  b.optimizer.lr = std::nextafter(0.1f, 1.0f);  // one bit apart
  EXPECT_FALSE(field_equal(lr, a, b));
  EXPECT_EQ(field_text(lr, a), "0.1");  // the shortest text that reads back as this float
  // Bucket sizes: the bytes the bucket planner plans (rounded), not a truncation of the MiB.
  a.sync_options.bucket_mb = 1.0;
  b.sync_options.bucket_mb = 1.0 + 0.4 / (1024.0 * 1024.0);  // 1 MiB + 0.4 bytes
  EXPECT_EQ(field_code(bucket, a), mib_to_bytes(1.0));
  EXPECT_TRUE(field_equal(bucket, a, b));
  b.sync_options.bucket_mb = 1.0 + 0.6 / (1024.0 * 1024.0);  // rounds to one byte more
  EXPECT_EQ(field_code(bucket, b), mib_to_bytes(1.0) + 1);
  EXPECT_FALSE(field_equal(bucket, a, b));
  EXPECT_EQ(code_text(bucket, field_code(bucket, a)), "1 MiB (1048576 bytes)");
}

TEST(ConfigAgreement, EveryAgreedFieldIsComparedAtStartUp) {
  const auto& rt = microddp::testing::runtime();
  auto comm = comm::make_communicator("mpi", rt);
  auto ops = kernels::make_cpu_ops(1);
  // A step schedule: then each schedule field changed alone is still a valid schedule (the odd rank
  // must get as far as the comparison), and the kind changes to constant.
  auto small_config = [] {
    TrainConfig c = ddp::small_config();
    c.lr_schedule.kind = model::LrScheduleKind::Step;
    c.lr_schedule.milestones = "5";
    return c;
  };
  {
    Trainer same(small_config(), *comm, *ops);
    EXPECT_NO_THROW(same.setup());
  }
  if (rt.size() < 2) GTEST_SKIP() << "agreement needs 2 ranks";
  const int odd = rt.size() - 1;
  int checked = 0;
  for (const auto& f : train_config_fields()) {
    if (!f.rules.agree) continue;
    const TrainConfig cfg = rt.rank() == odd ? with_field_changed(f, small_config()) : small_config();
    Trainer t(cfg, *comm, *ops);
    try {
      t.setup();
      ADD_FAILURE() << "ranks differing in " << f.name << " started";
    } catch (const core::UsageError& e) {
      const std::string m = e.what();
      EXPECT_TRUE(e.agreed()) << f.name;
      const std::string want =
          "configuration mismatch: rank " + std::to_string(odd) + " has " + std::string(f.name) + " = ";
      EXPECT_NE(m.find(want), std::string::npos) << m;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 37);  // every row but the local ones: keep_events, layer_events, prefetch
}

}  // namespace
}  // namespace microddp::ddp
