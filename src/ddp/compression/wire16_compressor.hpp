// wire16_compressor.hpp — fp16 / bf16 gradients on the wire, with optional error feedback.
//
// Per unit (a parameter, a bucket, or the whole buffer, as the strategy cuts it):
//   start:   [error feedback: E += G, then encode E and keep E = E - decode(wire), the rounding error]
//            wire = round-to-nearest-even(G or E) in 16 bits; all-reduce(sum) of the 16-bit data
//   finish:  G = decode(wire)
// The all-reduce accumulates in fp32 wherever the backend lets us (docs/compression.md): each
// combining step decodes both operands, adds in fp32 and rounds once back to 16 bits, so n ranks'
// values take at most n - 1 roundings beyond their own encode (n values need n - 1 additions, in
// every algorithm). Half the bytes of fp32.
//
// fp16 range: |x| >= 65520 rounds to inf (elementwise.hpp), and a sum beyond the range does too. We
// neither clip nor rescale: the infinity is identical on every rank (it is in the all-reduced data),
// so the trainer's numerics verdict refuses the step on all ranks together (--on-nan abort: an
// agreed error naming fp16's range; skip: the step is skipped). bf16 has fp32's range.
#pragma once

#include "ddp/compression/grad_compressor.hpp"
#include "kernels/host_mirror.hpp"
#include "kernels/ops_buffer.hpp"

namespace microddp::ddp {

class Wire16Compressor final : public GradCompressor {
 public:
  Wire16Compressor(comm::Communicator& comm, kernels::Ops& ops, const std::vector<model::ParamInfo>& params,
                   core::TensorView grads, const GradCompressionConfig& config, kernels::Wire16 format);

  int add_unit(std::int64_t offset, std::int64_t count, int first_param, int end_param) override;
  void begin_step(std::int64_t step) override;
  comm::Work start(int unit, comm::Mode mode) override;
  void finish(int unit) override;
  std::int64_t unit_wire_bytes(int unit) const override;
  // fp16: an infinity in the all-reduced gradient may be an overflow of fp16's range (bf16: none).
  std::string_view nonfinite_hint() const override;

  std::vector<CompressorState> state() override;
  void state_to_host() override;
  void state_from_host() override;

 private:
  struct Unit {
    std::int64_t offset = 0, count = 0;
  };
  float* grad(std::int64_t offset) { return static_cast<float*>(grads_.data) + offset; }

  kernels::Wire16 format_;
  core::DType wire_dtype_;
  std::vector<Unit> units_;
  kernels::OpsBuffer<std::uint16_t> wire_;  // the flat gradient layout in 16 bits
  kernels::OpsBuffer<float> error_;         // error feedback (state), the flat gradient layout
  kernels::HostMirror<float> host_error_;   // its host view (checkpoints)
};

}  // namespace microddp::ddp
