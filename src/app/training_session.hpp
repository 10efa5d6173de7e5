// training_session.hpp — what every command that trains over ranks sets up the same way, in one
// place: the compute backend (CPU, or --device's choice), the communicator with the run's
// communication settings (comm_settings.hpp), the command's --comm-timeout and --debug-sync (and the
// compute stream it must order gradient collectives after), and the Trainer on top of both.
//
// Contract: the constructor is collective (every rank of the job, same options): --device ranks
// agree on their device (compute_device.hpp) and the communicator is created on every rank. The
// session owns ops, communicator and trainer and destroys them in the reverse order (the trainer
// uses both, the communicator may hold the compute stream).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "app/blas_threads.hpp"
#include "app/comm_settings.hpp"
#include "app/train_options.hpp"
#include "comm/communicator.hpp"
#include "comm/runtime/mpi_runtime.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"

namespace microddp::app {

// --device and what it depends on (train only; the other commands compute on the CPU).
struct DeviceRequest {
  std::string device = "auto";  // cpu | cuda | auto
  bool comm_given = false;      // whether --comm was given (a GPU model defaults to nccl otherwise)
  bool tf32 = false;
};

class TrainingSession {
 public:
  // Without a DeviceRequest: CPU ops and o.comm as given, no device agreement.
  TrainingSession(const comm::MpiRuntime& mpi, const TrainOptions& o, const CommSettings& settings,
                  const std::optional<DeviceRequest>& device = {});
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  int threads() const { return threads_; }                  // BLAS threads per rank (--threads or automatic)
  const std::string& backend() const { return backend_; }   // the backend in use (--comm or the device's)
  const std::string& device_note() const { return note_; }  // why the default backend was not taken, or ""
  // How threads() was chosen (--threads, the environment or the allocation: app/blas_threads.hpp).
  const ThreadChoice& thread_choice() const { return thread_choice_; }
  kernels::Ops& ops() { return *ops_; }
  comm::Communicator& comm() { return *comm_; }

  // Builds the trainer over this session's communicator and ops (once; collective only in setup()).
  // Collective first: on the CPU, a model whose buffers cannot fit what a rank may allocate
  // (app/model_memory.hpp) is a core::UsageError on every rank, before anything is allocated.
  ddp::Trainer& start_trainer(const ddp::TrainConfig& config);
  // Benchmarks: the run continues in a new trainer for `next` (collective; app/strategy_switch.hpp).
  ddp::Trainer& switch_trainer(const ddp::TrainConfig& next);

 private:
  void check_memory(const ddp::TrainConfig& config) const;

  // Declared in construction order: destroyed trainer first, then communicator, then ops.
  const comm::MpiRuntime& mpi_;
  ThreadChoice thread_choice_;
  int threads_ = 1;
  std::string backend_, note_;
  std::unique_ptr<kernels::Ops> ops_;
  std::unique_ptr<comm::Communicator> comm_;
  std::unique_ptr<ddp::Trainer> trainer_;
};

}  // namespace microddp::app
