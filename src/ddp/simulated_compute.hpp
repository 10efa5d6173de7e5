// simulated_compute.hpp — an accelerator's backward emulated on the CPU path: before each layer's
// backward, the step's thread SLEEPS for that layer's share of --simulate-compute-ms.
//
// Why: on a GPU the backward kernels run on the device while the host's cores are free to drive
// communication, so a collective launched during backward really runs beside it. On a CPU with few
// cores the communication thread competes with the BLAS thread for the same core, and overlapping
// communication with backward cannot win (docs/ddp.md). Sleeping leaves the core to the
// communication thread (and MPI's progress) for that time, as a device computing would.
//
// Contract:
//   * X ms per backward pass (each micro-step's), in total, shared among the layers in proportion
//     to their parameters (weight + bias, padding not counted): a layer's backward is 2-3 GEMMs of
//     rows x its parameters, so on a device its time is about proportional to them, and gradient
//     bytes become ready uniformly in time (the assumption of docs/bucketing.md's derivation).
//   * The wait comes BEFORE the layer's gradients are computed: they become ready after it.
//   * Numerics are untouched: nothing is read or written, only time passes.
//   * A pass waits at least X ms in total (a sleep never ends early): each layer's overshoot is
//     taken off the next layer's sleep, so oversleeping does not accumulate over many small layers.
#pragma once

#include <cstdint>
#include <vector>

#include "model/mlp.hpp"

namespace microddp::ddp {

// The largest --simulate-compute-ms accepted: 10 s per backward pass, far above any device's
// backward of the models this program trains; a larger value is a typo (a 3-step demo would take
// minutes per step).
inline constexpr double kMaxSimulateComputeMs = 10000.0;

class SimulatedCompute {
 public:
  // total_ms: the simulated backward of one pass (0: none, wait_before_layer does nothing).
  SimulatedCompute(const model::FullMLP& model, double total_ms);

  bool active() const { return total_ns_ > 0; }
  // Layer `layer`'s share of the pass, in nanoseconds (the shares add up to the total).
  std::int64_t share_ns(int layer) const { return share_ns_[static_cast<std::size_t>(layer)]; }
  // At the start of each backward pass (forgets the previous pass's overshoot).
  void begin_pass() { overshoot_ns_ = 0; }
  // Sleeps for layer `layer`'s share, less the overshoot carried from earlier layers of this pass.
  void wait_before_layer(int layer);

 private:
  std::int64_t total_ns_ = 0;
  std::vector<std::int64_t> share_ns_;  // per layer, index = layer
  std::int64_t overshoot_ns_ = 0;       // slept beyond the shares so far in this pass
};

}  // namespace microddp::ddp
