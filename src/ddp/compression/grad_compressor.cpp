// grad_compressor.cpp — a mode's compressor, built by its row of the mode table (compression_config.hpp).
#include "ddp/compression/grad_compressor.hpp"

#include "core/error.hpp"

namespace microddp::ddp {

std::unique_ptr<GradCompressor> make_grad_compressor(const GradCompressionConfig& config, std::uint64_t seed,
                                                     comm::Communicator& comm, kernels::Ops& ops,
                                                     const std::vector<model::ParamInfo>& params,
                                                     core::TensorView grads) {
  validate_compression(config);
  const CompressionModeRow& row = compression_mode_row(config.mode);
  return row.make != nullptr ? row.make(config, seed, comm, ops, params, grads) : nullptr;
}

}  // namespace microddp::ddp
