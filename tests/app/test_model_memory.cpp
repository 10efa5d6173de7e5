// test_model_memory.cpp — app/model_memory.hpp: the estimate counts each buffer of the trainer's
// (parameters, gradients, optimizer state, activations, input batches) with the sharding and the
// rows per rank, never overflows at the largest sizes the options accept, and the refusal names
// both sizes and the binding limit.
#include <gtest/gtest.h>

#include <string>

#include "app/model_memory.hpp"
#include "model/param_layout.hpp"

namespace microddp::app {
namespace {

ddp::TrainConfig config(std::int64_t width, std::int64_t depth) {
  ddp::TrainConfig c;
  c.model = {width, width, depth, 10};
  c.global_batch = 64;
  c.optimizer.name = "adam";
  return c;
}

TEST(ModelMemory, CountsEachBuffer) {
  const ddp::TrainConfig c = config(100, 2);
  const double flat = static_cast<double>(model::flat_count(model::param_layout(c.model)));
  const ModelMemory one = estimate_model_memory(c, 1);
  EXPECT_EQ(one.parameters, 4 * flat);
  EXPECT_EQ(one.gradients, 4 * flat);
  EXPECT_EQ(one.optimizer_state, 2 * 4 * flat);  // Adam: two state buffers
  EXPECT_EQ(one.rows, 64);
  const ModelMemory four = estimate_model_memory(c, 4);
  EXPECT_EQ(four.rows, 16);
  EXPECT_LT(four.activations, one.activations);
  ddp::TrainConfig sharded = c;
  sharded.shard = ddp::zero::ShardMode::Optimizer;
  EXPECT_EQ(estimate_model_memory(sharded, 4).optimizer_state, 2 * flat);
}

TEST(ModelMemory, LargestSizesDoNotOverflow) {
  const ModelMemory m = estimate_model_memory(config(std::int64_t{1} << 24, 4096), 1);
  EXPECT_GT(m.total(), 1e19);  // past 2^63 bytes, and still positive
}

TEST(ModelMemory, RefusalNamesBothSizes) {
  const ddp::TrainConfig c = config(100000, 4);
  core::MemoryBudget budget{std::int64_t{16} << 30, "available memory (MemAvailable) 16.0 GiB"};
  const std::string m = model_memory_refusal(c, 1, budget);
  for (const char* part : {"100000-100000x4-10", "needs at least", "but a rank can have 16.0 GiB", "MemAvailable"}) {
    EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
  }
  EXPECT_NE(model_memory_refusal(c, 2, budget, 2).find("for its 2 replicas"), std::string::npos);
  EXPECT_EQ(model_memory_refusal(config(64, 2), 1, budget), "");
  EXPECT_EQ(model_memory_refusal(c, 1, core::MemoryBudget{}), "");  // no limit known: never refuses
}

}  // namespace
}  // namespace microddp::app
