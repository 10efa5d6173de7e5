// lab_powersgd.hpp — the seam of lab 10 (docs/labs/10-powersgd): `--grad-compression lab-powersgd`
// runs the student's powersgd_step (lab_api.hpp) for every weight matrix, inside the real trainer,
// with every strategy (naive, flat, overlap, bucketed), as a compressor between the strategy and
// the communicator (ddp/compression/grad_compressor.hpp). Around the student's part everything is
// the production PowerSGD's (ddp/compression/powersgd_compressor.hpp):
//   which matrices   the same rule (PowerSgdCompressor::matrix_rank): biases and matrices too small
//                    to gain travel uncompressed, and the production code all-reduces them (packed,
//                    one collective per unit, launched in start(): asynchronously under overlap and
//                    bucketed)
//   the state        Q per matrix (the same initial Q: PowerSgdCompressor::initial_q) and the error
//                    buffer in the flat gradient layout (zero outside compressed matrices), under the
//                    production names, so checkpoints of a lab run read like those of `powersgd`
//   the schedule     --powersgd-start-step: earlier steps all-reduce the unit in fp32, as production
//   finish(unit)     after the plain tensors arrived: powersgd_step for each matrix of the unit,
//                    in parameter order, every collective the student makes a blocking fp32
//                    all-reduce on the program's communicator
// What differs from production, and why: two all-reduces per MATRIX (production packs the P's of a
// unit into one all-reduce, and its Q's into another), so the student's function owns one matrix
// whole; the bytes are the same. Host gradients only (--device cpu): the student's code reads and
// writes them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_buffer.hpp"
#include "ddp/compression/grad_compressor.hpp"
#include "labs/lab_api.hpp"

namespace microddp::labs {

class LabPowerSgdCompressor final : public ddp::GradCompressor {
 public:
  LabPowerSgdCompressor(comm::Communicator& comm, kernels::Ops& ops, const std::vector<model::ParamInfo>& params,
                        core::TensorView grads, const ddp::GradCompressionConfig& config, std::uint64_t seed);

  int add_unit(std::int64_t offset, std::int64_t count, int first_param, int end_param) override;
  void begin_step(std::int64_t step) override;
  comm::Work start(int unit, comm::Mode mode) override;
  void finish(int unit) override;
  std::int64_t unit_wire_bytes(int unit) const override;
  std::vector<ddp::CompressorState> state() override;

  // The context of this step (the grader reads its calls).
  const PowerSgdContext& context() const { return ctx_; }
  // The matrices powersgd_step is called for, in call order within a step (the grader's names).
  const std::vector<LabMatrix>& matrices() const { return all_; }

 private:
  friend class PowerSgdContext;
  struct Unit {
    std::int64_t offset = 0, count = 0;
    std::vector<int> matrices;                    // indices into all_
    std::vector<int> plain;                       // parameters all-reduced uncompressed
    std::int64_t pack_begin = 0, pack_count = 0;  // region of pack_
  };
  bool compressing() const { return step_ >= config_.powersgd_start_step; }
  void ensure_buffers();
  void all_reduce(float* data, std::int64_t count);
  void orthonormalize(float* p, std::int64_t rows, std::int64_t cols);
  // Whether [data, data + count) lies inside the current matrix's p or q.
  bool inside_pq(const float* data, std::int64_t count) const;

  std::uint64_t seed_;
  PowerSgdContext ctx_;
  std::vector<Unit> units_;
  std::vector<LabMatrix> all_;               // pointers set by ensure_buffers()
  std::vector<int> param_of_;                // per matrix: its parameter
  std::vector<std::int64_t> p_off_, q_off_;  // per matrix, in p_ and q_
  std::int64_t p_total_ = 0, q_total_ = 0, pack_total_ = 0;
  bool buffers_ready_ = false;
  int current_ = -1;                // the matrix inside powersgd_step, -1 outside
  std::int64_t collective_ns_ = 0;  // this step's time in the student's collectives
  core::HostBuffer<float> p_, q_, error_, pack_;
};

// Adds the row `lab-powersgd` to the compression mode table once; returns its mode.
ddp::CompressionMode lab_powersgd_mode();

}  // namespace microddp::labs
