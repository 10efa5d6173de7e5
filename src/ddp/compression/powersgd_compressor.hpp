// powersgd_compressor.hpp — PowerSGD (Vogels, Karimireddy, Jaggi, NeurIPS 2019) with error feedback.
//
// Per weight matrix M (rows, cols) of a unit, with rank r = min(R, rows, cols) and Q (cols, r)
// kept from the previous step (warm start; initially normal random, a pure function of the seed):
//   start:   [error feedback: E += G, M = E; else M = G]
//            P = M Q                       (rows, r)    local
//            all-reduce(sum) [P of every matrix | the unit's uncompressed tensors]    (one collective)
//   finish:  P = orthonormalise(P)         identical on all ranks (same all-reduced input)
//            Q = M^T P                     (cols, r)    local
//            [error feedback: E -= P Q^T, i.e. E = M - P P^T M, this rank's compression error]
//            all-reduce(sum) [Q of every matrix]                                       (second collective)
//            G = P Q^T                     the rank-r approximation of the SUM of the ranks' M
// Biases and matrices too small to gain are sent uncompressed in the first collective: a matrix is
// compressed only when rows*cols >= min_rate * r*(rows + cols) (PyTorch's min_compression_rate, 2).
// Steps before powersgd_start_step all-reduce the unit uncompressed (fp32), like mode none.
//
// State: Q of every compressed matrix (identical on all ranks: it is all-reduced) and the error
// buffer E (per rank, the flat gradient layout; zero outside compressed matrices). Both go into
// checkpoints (state()). Orthogonalisation runs on the host (a GPU copies P down and back: r*rows
// floats per matrix).
#pragma once

#include <vector>

#include "core/host_buffer.hpp"
#include "ddp/compression/grad_compressor.hpp"
#include "kernels/host_mirror.hpp"
#include "kernels/ops_buffer.hpp"

namespace microddp::ddp {

class PowerSgdCompressor final : public GradCompressor {
 public:
  // PyTorch's default min_compression_rate: below 2x the saving does not pay for two collectives.
  static constexpr double kDefaultMinRate = 2.0;
  PowerSgdCompressor(comm::Communicator& comm, kernels::Ops& ops, const std::vector<model::ParamInfo>& params,
                     core::TensorView grads, const GradCompressionConfig& config, std::uint64_t seed,
                     double min_rate = kDefaultMinRate);

  int add_unit(std::int64_t offset, std::int64_t count, int first_param, int end_param) override;
  void begin_step(std::int64_t step) override;
  comm::Work start(int unit, comm::Mode mode) override;
  void finish(int unit) override;
  std::int64_t unit_wire_bytes(int unit) const override;

  std::vector<CompressorState> state() override;
  void state_to_host() override;
  void state_from_host() override;

  // Number of matrices compressed (the others travel uncompressed).
  int compressed_matrices() const;

  // The rank a parameter travels at: min(max_rank, rows, cols), or 0 when it travels uncompressed
  // (a bias, a vector, or a matrix below min_rate: the rule above).
  static std::int64_t matrix_rank(const model::ParamInfo& p, std::int64_t max_rank, double min_rate = kDefaultMinRate);
  // Element e of parameter `param`'s initial Q (cols, r), row-major: standard normal, a pure function
  // of (seed, param, e), so every rank starts from the same Q without communication.
  static float initial_q(std::uint64_t seed, int param, std::int64_t e);

 private:
  struct Matrix {
    int param = 0;
    std::int64_t rows = 0, cols = 0, rank = 0;
    std::int64_t p_offset = 0;  // in p_pack_
    std::int64_t q_offset = 0;  // in q_
  };
  struct Plain {
    int param = 0;
    std::int64_t pack_offset = 0;  // in p_pack_
  };
  struct Unit {
    std::int64_t offset = 0, count = 0;
    std::vector<Matrix> matrices;
    std::vector<Plain> plain;
    std::int64_t p_begin = 0, p_count = 0;  // region of p_pack_
    std::int64_t q_begin = 0, q_count = 0;  // region of q_
  };
  bool compressing() const { return step_ >= config_.powersgd_start_step; }
  void ensure_buffers();
  const float* matrix_input(const Matrix& m);  // M: the error buffer (error feedback) or the gradient
  float* grad(const model::ParamInfo& p) { return static_cast<float*>(grads_.data) + p.offset; }

  std::uint64_t seed_;
  double min_rate_;
  std::vector<Unit> units_;
  std::int64_t p_total_ = 0, q_total_ = 0;
  bool buffers_ready_ = false;
  kernels::OpsBuffer<float> p_pack_;             // P's and uncompressed tensors, per unit contiguous
  kernels::OpsBuffer<float> q_;                  // Q's (state), per unit contiguous
  kernels::OpsBuffer<float> error_;              // error feedback (state), the flat gradient layout
  kernels::HostMirror<float> host_p_;               // P's orthonormalised on the host, a unit at a time
  kernels::HostMirror<float> host_q_, host_error_;  // host views of the state (checkpoints)
};

}  // namespace microddp::ddp
