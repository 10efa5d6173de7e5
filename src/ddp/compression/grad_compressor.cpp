// grad_compressor.cpp — the compressor factory.
#include "ddp/compression/grad_compressor.hpp"

#include "core/error.hpp"
#include "ddp/compression/powersgd_compressor.hpp"
#include "ddp/compression/wire16_compressor.hpp"

namespace microddp::ddp {

std::unique_ptr<GradCompressor> make_grad_compressor(const GradCompressionConfig& config, std::uint64_t seed,
                                                     comm::Communicator& comm, kernels::Ops& ops,
                                                     const std::vector<model::ParamInfo>& params,
                                                     core::TensorView grads) {
  validate_compression(config);
  switch (parse_compression_mode(config.mode)) {
    case CompressionMode::None:
      return nullptr;
    case CompressionMode::PowerSgd:
      return std::make_unique<PowerSgdCompressor>(comm, ops, params, grads, config, seed);
    case CompressionMode::Fp16:
      return std::make_unique<Wire16Compressor>(comm, ops, params, grads, config, kernels::Wire16::F16);
    case CompressionMode::Bf16:
      return std::make_unique<Wire16Compressor>(comm, ops, params, grads, config, kernels::Wire16::BF16);
  }
  return nullptr;
}

}  // namespace microddp::ddp
