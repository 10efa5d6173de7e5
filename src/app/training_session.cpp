// training_session.cpp — ops, communicator and trainer wired once (see training_session.hpp).
#include "app/training_session.hpp"

#include "app/agreed_usage_error.hpp"
#include "app/command.hpp"
#include "app/compute_device.hpp"
#include "app/model_memory.hpp"
#include "app/strategy_switch.hpp"
#include "comm/factory.hpp"
#include "core/error.hpp"
#include "core/memory_limit.hpp"

namespace microddp::app {

TrainingSession::TrainingSession(const comm::MpiRuntime& mpi, const TrainOptions& o, const CommSettings& settings,
                                 const std::optional<DeviceRequest>& device)
    : mpi_(mpi), thread_choice_(blas_threads(o.threads, mpi, settings)), threads_(thread_choice_.threads),
      backend_(o.comm) {
  if (device) {
    ComputeChoice compute = choose_compute(device->device, o.comm, device->comm_given, device->tf32, threads_, mpi);
    ops_ = std::move(compute.ops);
    backend_ = compute.comm;  // a GPU model without --comm: nccl (mpi when ranks share a GPU)
    note_ = compute.note;
  } else {
    ops_ = kernels::make_cpu_ops(threads_);
  }
  comm_ = comm::make_communicator(backend_, mpi, settings.config, settings.faults);
  comm_->set_compute_stream(ops_->native_stream());  // NCCL orders gradient collectives after backward
  comm_->set_comm_timeout(o.comm_timeout_s);
  comm_->set_debug_sync(o.debug_sync);  // collective: ranks must agree
}

void TrainingSession::check_memory(const ddp::TrainConfig& config) const {
  std::string refusal;
  if (ops_->device() == core::Device::Host) {
    refusal = model_memory_refusal(config, mpi_.size(), core::memory_budget(core::host_memory(), mpi_.local_size()));
  }
  agree_on_usage_error(mpi_, "the model's memory against each rank's limit", refusal,
                       "the model does not fit the memory of another rank (see its message)");
}

ddp::Trainer& TrainingSession::start_trainer(const ddp::TrainConfig& config) {
  MDDP_CHECK(trainer_ == nullptr, "the training session already has a trainer");
  check_memory(config);
  trainer_ = std::make_unique<ddp::Trainer>(config, *comm_, *ops_);
  return *trainer_;
}

ddp::Trainer& TrainingSession::switch_trainer(const ddp::TrainConfig& next) {
  MDDP_CHECK(trainer_ != nullptr, "the training session has no trainer to switch");
  check_memory(next);
  trainer_ = continue_with(std::move(trainer_), next, *comm_, *ops_);
  return *trainer_;
}

}  // namespace microddp::app
