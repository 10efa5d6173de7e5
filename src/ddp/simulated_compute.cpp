// simulated_compute.cpp — per-layer shares of the simulated backward, and the sleep.
#include "ddp/simulated_compute.hpp"

#include <chrono>
#include <cmath>
#include <thread>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace microddp::ddp {

SimulatedCompute::SimulatedCompute(const model::FullMLP& model, double total_ms) {
  MDDP_USAGE_CHECK(std::isfinite(total_ms) && total_ms >= 0.0 && total_ms <= kMaxSimulateComputeMs,
                   "--simulate-compute-ms must be a finite number of milliseconds in [0, "
                       << kMaxSimulateComputeMs << "], got " << total_ms);
  total_ns_ = std::llround(total_ms * 1e6);
  const auto layers = static_cast<std::size_t>(model.num_layers());
  share_ns_.assign(layers, 0);
  if (total_ns_ == 0) return;
  const std::int64_t params = model.parameter_count();
  // Cumulative rounding: layer l gets round(total * P(<= l) / P) - round(total * P(< l) / P), so the
  // shares are proportional to the parameters and add up to the total exactly.
  std::int64_t before = 0, given = 0;
  for (std::size_t l = 0; l < layers; ++l) {
    const int layer = static_cast<int>(l);
    before += model.weight(layer).count + model.bias(layer).count;
    const auto upto = static_cast<std::int64_t>(std::llround(static_cast<double>(total_ns_) *
                                                             static_cast<double>(before) / static_cast<double>(params)));
    share_ns_[l] = upto - given;
    given = upto;
  }
}

void SimulatedCompute::wait_before_layer(int layer) {
  if (total_ns_ == 0) return;
  const std::int64_t want = share_ns(layer) - overshoot_ns_;
  if (want <= 0) {  // earlier layers overslept by at least this layer's share
    overshoot_ns_ = -want;
    return;
  }
  const std::int64_t t0 = core::now_ns();
  std::this_thread::sleep_for(std::chrono::nanoseconds(want));
  overshoot_ns_ = (core::now_ns() - t0) - want;  // >= 0: a sleep never ends early
}

}  // namespace microddp::ddp
