// powersgd_compressor.cpp — see powersgd_compressor.hpp for the algorithm and its state.
#include "ddp/compression/powersgd_compressor.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/timer.hpp"
#include "ddp/compression/orthonormalize.hpp"

namespace microddp::ddp {

namespace {
// Philox stream of the initial Q of parameter i: kQStreamBase + i (far from the model's own streams).
constexpr std::uint64_t kQStreamBase = 0x50534744'00000000ull;  // "PSGD"
}  // namespace

PowerSgdCompressor::PowerSgdCompressor(comm::Communicator& comm, kernels::Ops& ops,
                                       const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                       const GradCompressionConfig& config, std::uint64_t seed, double min_rate)
    : GradCompressor(comm, ops, params, grads, config),
      seed_(seed),
      min_rate_(min_rate) {
  MDDP_CHECK(grads.dtype == core::DType::F32, "powersgd: gradients must be fp32");
}

int PowerSgdCompressor::add_unit(std::int64_t offset, std::int64_t count, int first_param, int end_param) {
  MDDP_CHECK(!buffers_ready_, "powersgd: units must be registered before the first step");
  Unit u;
  u.offset = offset;
  u.count = count;
  u.p_begin = p_total_;
  u.q_begin = q_total_;
  for (int i = first_param; i < end_param; ++i) {
    const model::ParamInfo& p = params_[static_cast<std::size_t>(i)];
    const std::int64_t r = matrix_rank(p, config_.powersgd_rank, min_rate_);
    if (r > 0) {
      u.matrices.push_back(Matrix{i, p.rows, p.cols, r, p_total_, q_total_});
      p_total_ += p.rows * r;
      q_total_ += p.cols * r;
    }
  }
  for (int i = first_param; i < end_param; ++i) {  // uncompressed tensors after the P's
    const bool compressed =
        std::any_of(u.matrices.begin(), u.matrices.end(), [i](const Matrix& m) { return m.param == i; });
    if (compressed) continue;
    u.plain.push_back(Plain{i, p_total_});
    p_total_ += params_[static_cast<std::size_t>(i)].count;
  }
  u.p_count = p_total_ - u.p_begin;
  u.q_count = q_total_ - u.q_begin;
  units_.push_back(std::move(u));
  return static_cast<int>(units_.size()) - 1;
}

std::int64_t PowerSgdCompressor::matrix_rank(const model::ParamInfo& p, std::int64_t max_rank, double min_rate) {
  const std::int64_t r = std::min({max_rank, p.rows, p.cols});
  const bool compress = !p.is_bias && p.cols > 1 &&
                        static_cast<double>(p.rows) * static_cast<double>(p.cols) >=
                            min_rate * static_cast<double>(r) * static_cast<double>(p.rows + p.cols);
  return compress ? r : 0;
}

float PowerSgdCompressor::initial_q(std::uint64_t seed, int param, std::int64_t e) {
  return core::normal01(seed, kQStreamBase + static_cast<std::uint64_t>(param), static_cast<std::uint64_t>(e));
}

int PowerSgdCompressor::compressed_matrices() const {
  int n = 0;
  for (const Unit& u : units_) n += static_cast<int>(u.matrices.size());
  return n;
}

void PowerSgdCompressor::ensure_buffers() {
  if (buffers_ready_) return;
  buffers_ready_ = true;
  p_pack_ = kernels::OpsBuffer<float>(ops_, std::max<std::int64_t>(p_total_, 1));
  q_ = kernels::OpsBuffer<float>(ops_, std::max<std::int64_t>(q_total_, 1));
  if (config_.error_feedback) error_ = kernels::OpsBuffer<float>(ops_, grads_.count);  // zero-filled
  // Initial Q: standard normal, a pure function of (seed, parameter, element): identical on every
  // rank without communication.
  core::HostBuffer<float> init(std::max<std::int64_t>(q_total_, 1));
  for (const Unit& u : units_) {
    for (const Matrix& m : u.matrices) {
      for (std::int64_t e = 0; e < m.cols * m.rank; ++e) {
        init[static_cast<std::size_t>(m.q_offset + e)] = initial_q(seed_, m.param, e);
      }
    }
  }
  q_.from_host(init.data(), 0, q_total_);
  host_p_ = kernels::HostMirror<float>(ops_, p_pack_.data(), p_total_);
  host_q_ = kernels::HostMirror<float>(ops_, q_.data(), q_total_);
  if (config_.error_feedback) host_error_ = kernels::HostMirror<float>(ops_, error_.data(), grads_.count);
}

void PowerSgdCompressor::begin_step(std::int64_t step) {
  GradCompressor::begin_step(step);
  ensure_buffers();
  encode_ns_ = 0;
}

const float* PowerSgdCompressor::matrix_input(const Matrix& m) {
  const model::ParamInfo& p = params_[static_cast<std::size_t>(m.param)];
  return config_.error_feedback ? error_.data() + p.offset : grad(p);
}

comm::Work PowerSgdCompressor::start(int unit, comm::Mode mode) {
  Unit& u = units_[static_cast<std::size_t>(unit)];
  if (!compressing()) return comm_.all_reduce(grads_.slice(u.offset, u.count), comm::ReduceOp::Sum, mode);
  const std::int64_t t0 = core::now_ns();
  for (const Matrix& m : u.matrices) {
    const model::ParamInfo& p = params_[static_cast<std::size_t>(m.param)];
    if (config_.error_feedback) ops_.axpy(1.0f, grad(p), error_.data() + p.offset, p.count);  // M = G + E
    // P (rows, r) = M (rows, cols) * Q (cols, r)
    ops_.gemm(false, false, m.rows, m.rank, m.cols, 1.0f, matrix_input(m), q_.data() + m.q_offset, 0.0f,
              p_pack_.data() + m.p_offset);
  }
  for (const Plain& pl : u.plain) {
    const model::ParamInfo& p = params_[static_cast<std::size_t>(pl.param)];
    ops_.copy(p_pack_.data() + pl.pack_offset, grad(p), p.count);
  }
  encode_ns_ += core::now_ns() - t0;
  return comm_.all_reduce(core::TensorView(p_pack_.data() + u.p_begin, u.p_count, core::DType::F32, grads_.device),
                          comm::ReduceOp::Sum, mode);
}

void PowerSgdCompressor::finish(int unit) {
  Unit& u = units_[static_cast<std::size_t>(unit)];
  if (!compressing()) return;
  std::int64_t t0 = core::now_ns();
  for (const Plain& pl : u.plain) {  // summed exactly like an uncompressed all-reduce
    const model::ParamInfo& p = params_[static_cast<std::size_t>(pl.param)];
    ops_.copy(grad(p), p_pack_.data() + pl.pack_offset, p.count);
  }
  if (u.matrices.empty()) {
    encode_ns_ += core::now_ns() - t0;
    return;
  }
  // Orthonormalise every P of the unit on the host (a GPU copies the region down and back).
  const std::int64_t p_mat = u.matrices.back().p_offset + u.matrices.back().rows * u.matrices.back().rank - u.p_begin;
  host_p_.to_host(u.p_begin, p_mat);
  for (const Matrix& m : u.matrices) orthonormalize_columns(host_p_.host() + m.p_offset, m.rows, m.rank);
  host_p_.from_host(u.p_begin, p_mat);
  for (const Matrix& m : u.matrices) {
    const float* pm = p_pack_.data() + m.p_offset;
    float* qm = q_.data() + m.q_offset;
    // Q (cols, r) = M^T (cols, rows) * P (rows, r): this rank's share of the sum.
    ops_.gemm(true, false, m.cols, m.rank, m.rows, 1.0f, matrix_input(m), pm, 0.0f, qm);
    if (config_.error_feedback) {
      // E = M - P Q^T: what this rank's rank-r projection left out, added back next step.
      const model::ParamInfo& p = params_[static_cast<std::size_t>(m.param)];
      ops_.gemm(false, true, m.rows, m.cols, m.rank, -1.0f, pm, qm, 1.0f, error_.data() + p.offset);
    }
  }
  encode_ns_ += core::now_ns() - t0;
  comm_.all_reduce(core::TensorView(q_.data() + u.q_begin, u.q_count, core::DType::F32, grads_.device),
                   comm::ReduceOp::Sum, comm::Mode::Sync);
  t0 = core::now_ns();
  for (const Matrix& m : u.matrices) {
    // G (rows, cols) = P (rows, r) * Q^T (r, cols): the approximation of the sum over ranks.
    const model::ParamInfo& p = params_[static_cast<std::size_t>(m.param)];
    ops_.gemm(false, true, m.rows, m.cols, m.rank, 1.0f, p_pack_.data() + m.p_offset, q_.data() + m.q_offset, 0.0f,
              grad(p));
  }
  encode_ns_ += core::now_ns() - t0;
}

std::int64_t PowerSgdCompressor::unit_wire_bytes(int unit) const {
  const Unit& u = units_[static_cast<std::size_t>(unit)];
  const std::int64_t floats = compressing() ? u.p_count + u.q_count : u.count;
  return floats * static_cast<std::int64_t>(sizeof(float));
}

std::vector<CompressorState> PowerSgdCompressor::state() {
  ensure_buffers();
  std::vector<CompressorState> s;
  s.push_back({"powersgd_q", host_q_.host(), q_total_, false});
  if (config_.error_feedback) s.push_back({"error_feedback", host_error_.host(), grads_.count, true});
  return s;
}

void PowerSgdCompressor::state_to_host() {
  ensure_buffers();
  ops_.synchronize();
  host_q_.to_host();
  host_error_.to_host();  // empty without error feedback
}

void PowerSgdCompressor::state_from_host() {
  ensure_buffers();
  host_q_.from_host();
  host_error_.from_host();
}

}  // namespace microddp::ddp
