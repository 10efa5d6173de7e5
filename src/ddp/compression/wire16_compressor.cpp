// wire16_compressor.cpp — see wire16_compressor.hpp.
#include "ddp/compression/wire16_compressor.hpp"

#include "core/error.hpp"
#include "core/timer.hpp"

namespace microddp::ddp {

Wire16Compressor::Wire16Compressor(comm::Communicator& comm, kernels::Ops& ops,
                                   const std::vector<model::ParamInfo>& params, core::TensorView grads,
                                   const GradCompressionConfig& config, kernels::Wire16 format)
    : GradCompressor(comm, ops, params, grads, config),
      format_(format),
      wire_dtype_(format == kernels::Wire16::F16 ? core::DType::F16 : core::DType::BF16),
      wire_(ops, grads.count) {
  MDDP_CHECK(grads.dtype == core::DType::F32, "16-bit compression: gradients must be fp32");
  if (config.error_feedback) {
    error_ = kernels::OpsBuffer<float>(ops, grads.count);  // zero-filled
    host_error_ = kernels::HostMirror<float>(ops, error_.data(), grads.count);
  }
}

int Wire16Compressor::add_unit(std::int64_t offset, std::int64_t count, int, int) {
  MDDP_CHECK(offset >= 0 && count >= 0 && offset + count <= grads_.count,
             "16-bit compression: unit outside the gradients");
  units_.push_back({offset, count});
  return static_cast<int>(units_.size()) - 1;
}

void Wire16Compressor::begin_step(std::int64_t step) {
  GradCompressor::begin_step(step);
  encode_ns_ = 0;
}

comm::Work Wire16Compressor::start(int unit, comm::Mode mode) {
  const Unit& u = units_[static_cast<std::size_t>(unit)];
  const std::int64_t t0 = core::now_ns();
  std::uint16_t* w = wire_.data() + u.offset;
  if (config_.error_feedback) {
    float* e = error_.data() + u.offset;
    ops_.axpy(1.0f, grad(u.offset), e, u.count);    // M = G + E
    ops_.encode_wire16(format_, e, w, e, u.count);  // wire = round(M), E = M - decode(wire)
  } else {
    ops_.encode_wire16(format_, grad(u.offset), w, nullptr, u.count);
  }
  encode_ns_ += core::now_ns() - t0;
  return comm_.all_reduce(core::TensorView(w, u.count, wire_dtype_, grads_.device), comm::ReduceOp::Sum, mode);
}

void Wire16Compressor::finish(int unit) {
  const Unit& u = units_[static_cast<std::size_t>(unit)];
  const std::int64_t t0 = core::now_ns();
  ops_.decode_wire16(format_, wire_.data() + u.offset, grad(u.offset), u.count);
  encode_ns_ += core::now_ns() - t0;
}

std::int64_t Wire16Compressor::unit_wire_bytes(int unit) const {
  return units_[static_cast<std::size_t>(unit)].count * 2;
}

std::vector<CompressorState> Wire16Compressor::state() {
  if (!config_.error_feedback) return {};
  return {{"error_feedback", host_error_.host(), grads_.count, true}};
}

void Wire16Compressor::state_to_host() { host_error_.to_host(); }  // nothing without error feedback

void Wire16Compressor::state_from_host() { host_error_.from_host(); }

std::string_view Wire16Compressor::nonfinite_hint() const {
  // The fp16 wire format's range safety (see the header): no clipping, no silent saturation; an
  // overflow is an infinity in the all-reduced data, hence on every rank.
  if (format_ != kernels::Wire16::F16) return {};
  return "with --grad-compression fp16 this includes gradient values or sums beyond fp16's range, |x| > 65504: "
         "use --grad-compression bf16, which has fp32's range";
}

}  // namespace microddp::ddp
