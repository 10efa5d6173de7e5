// input_pipeline.cpp — which input pipeline a run gets (see input_pipeline.hpp).
#include "ddp/input_pipeline.hpp"

#include "ddp/direct_input.hpp"
#include "ddp/prefetching_input.hpp"

namespace microddp::ddp {

InputChoice make_input_pipeline(kernels::Ops& ops, const TrainConfig& config, int rank, int world, float* model_input,
                                const data::DataSource* source) {
  const bool gpu = ops.device() != core::Device::Host;
  std::string off;  // why not to prefetch; empty: prefetch
  if (config.prefetch == 0) {
    off = "prefetch 0: each batch filled when the step asks";
  } else if (gpu && config.accum_steps > 1) {
    // The copy stream would overwrite the model's input, and a slot be refilled, while the previous
    // micro-step (queued without a synchronisation in between) may still read them.
    off = "prefetch off: a GPU with --accum-steps > 1 fills each batch when the step asks";
  } else if (gpu && (source == nullptr || source->make_device_generator(ops) != nullptr)) {
    off = "prefetch off: the synthetic rows are made on the GPU";
  } else if (source != nullptr && !source->prepare_fill_off_thread()) {
    off = "prefetch off: " + source->describe() + " is read on the step's thread (HDF5 is not thread-safe here)";
  }
  InputChoice c;
  if (off.empty()) {
    c.pipeline = std::make_unique<PrefetchingInput>(ops, config.model, config.seed, config.global_batch, rank, world,
                                                    model_input, static_cast<int>(config.prefetch));
    c.note = "prefetch " + std::to_string(config.prefetch);
  } else {
    c.pipeline =
        std::make_unique<DirectInput>(ops, config.model, config.seed, config.global_batch, rank, world, model_input);
    c.note = off;
  }
  if (source != nullptr) c.pipeline->set_source(*source);
  return c;
}

}  // namespace microddp::ddp
