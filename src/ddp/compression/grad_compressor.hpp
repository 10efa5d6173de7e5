// grad_compressor.hpp — the compression layer between the GradSync strategies and the Communicator.
//
// A strategy cuts the flat gradient buffer into units (naive: one per parameter, flat: one for all,
// overlap/bucketed: one per bucket) and registers them once with add_unit(). Each step it calls,
// per unit and in the same order on every rank:
//   start(u, mode)   encode the unit's gradient and launch its first collective (returns its Work;
//                    Mode::Async from the bucketed strategies' backward hook, so it overlaps)
//   finish(u)        after that Work completed: the rest of the algorithm (PowerSGD: orthogonalise,
//                    the second all-reduce, which blocks), then decode into the gradient buffer,
//                    which then holds the (approximate) SUM of all ranks' gradients.
// Contract: every rank issues the same collectives in the same order (they follow the units'
// order); decoded gradients are bitwise identical on all ranks (everything after the all-reduces
// is a deterministic function of all-reduced data); per-rank state (error feedback) never leaves the
// rank except into checkpoints. Nothing allocates after add_unit()/the first step's buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "ddp/compression/compression_config.hpp"
#include "kernels/ops.hpp"
#include "model/param_layout.hpp"

namespace microddp::ddp {

// One tensor of a compressor's state, for checkpoints (host view; see GradCompressor::state()).
struct CompressorState {
  std::string name;       // "powersgd_q", "error_feedback"
  float* data = nullptr;  // host memory (a mirror of device state; refreshed by state_to_host())
  std::int64_t count = 0;
  bool per_rank = false;  // true: differs between ranks (error feedback); false: identical on all ranks
};

class GradCompressor {
 public:
  GradCompressor(comm::Communicator& comm, kernels::Ops& ops, const std::vector<model::ParamInfo>& params,
                 core::TensorView grads, const GradCompressionConfig& config)
      : comm_(comm), ops_(ops), params_(params), grads_(grads), config_(config) {}
  virtual ~GradCompressor() = default;
  GradCompressor(const GradCompressor&) = delete;
  GradCompressor& operator=(const GradCompressor&) = delete;

  // Registers unit [offset, offset + count) of the gradient buffer holding parameters
  // [first_param, end_param); returns its index. Units must be registered before the first step.
  virtual int add_unit(std::int64_t offset, std::int64_t count, int first_param, int end_param) = 0;
  virtual void begin_step(std::int64_t step) { step_ = step; }
  virtual comm::Work start(int unit, comm::Mode mode) = 0;
  virtual void finish(int unit) = 0;

  // Bytes all-reduced for `unit` in the current step (the payload handed to the collectives; the
  // algorithm's own factor, e.g. 2(n-1)/n for a ring, comes on top as for uncompressed data).
  virtual std::int64_t unit_wire_bytes(int unit) const = 0;
  // Host nanoseconds spent encoding/decoding (not waiting for collectives) since begin_step().
  std::int64_t encode_ns() const { return encode_ns_; }
  // What a non-finite synchronised gradient may mean under this wire format, for the NaN policy's
  // message (ddp/numerics_verdict.hpp); empty: nothing beyond what fp32 would mean.
  virtual std::string_view nonfinite_hint() const { return {}; }

  // Checkpoint state: host views, valid after state_to_host(); state_from_host() uploads them.
  virtual std::vector<CompressorState> state() { return {}; }
  virtual void state_to_host() {}
  virtual void state_from_host() {}

 protected:
  comm::Communicator& comm_;
  kernels::Ops& ops_;
  const std::vector<model::ParamInfo>& params_;
  core::TensorView grads_;
  GradCompressionConfig config_;
  std::int64_t step_ = 0;
  std::int64_t encode_ns_ = 0;
};

// nullptr for mode none. `seed`: PowerSGD's initial Q is a pure function of (seed, parameter, element).
std::unique_ptr<GradCompressor> make_grad_compressor(const GradCompressionConfig& config, std::uint64_t seed,
                                                     comm::Communicator& comm, kernels::Ops& ops,
                                                     const std::vector<model::ParamInfo>& params,
                                                     core::TensorView grads);

}  // namespace microddp::ddp
