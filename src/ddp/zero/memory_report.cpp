// memory_report.cpp — see memory_report.hpp.
#include "ddp/zero/memory_report.hpp"

#include <cstdio>

namespace microddp::ddp::zero {

MemoryReport predict_memory(std::int64_t flat_count, std::int64_t shard_state_count, int state_buffers, ShardMode mode,
                            std::int64_t activation_bytes, std::int64_t grad_pool_count) {
  constexpr std::int64_t kF = sizeof(float);
  MemoryReport m;
  m.parameters = kF * flat_count;
  const bool pooled = mode == ShardMode::Gradients && grad_pool_count > 0;
  m.gradients = pooled ? 0 : kF * flat_count;
  m.comm_buffers = pooled ? kF * grad_pool_count : 0;
  const std::int64_t covered = mode == ShardMode::None ? flat_count : shard_state_count;
  m.optimizer_state = kF * state_buffers * covered;
  if (mode == ShardMode::Gradients) m.reduced_gradients = kF * shard_state_count;
  m.activations = activation_bytes;
  return m;
}

std::string format_memory(const MemoryReport& m) {
  auto mib = [](std::int64_t b) { return static_cast<double>(b) / (1 << 20); };
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "params %.2f MiB, grads %.2f MiB, reduced-grad shard %.2f MiB, optimizer state %.2f MiB, comm buffers "
                "%.2f MiB, activations %.2f MiB, host staging %.2f MiB, total %.2f MiB",
                mib(m.parameters), mib(m.gradients), mib(m.reduced_gradients), mib(m.optimizer_state),
                mib(m.comm_buffers), mib(m.activations), mib(m.host_staging), mib(m.total()));
  return buf;
}

}  // namespace microddp::ddp::zero
