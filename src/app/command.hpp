// command.hpp — how the `microddp` subcommands plug into main.
//
// A command adds its options to a CLI11 subcommand at registration, checks every value that can be
// checked without MPI in validate() (so bad input ends with exit code 2 on every rank before MPI
// starts: no hang possible), and does its work in run() with MPI up. Main hands it the communication
// settings parsed from the environment (comm_settings.hpp) before run(); it builds every
// communicator through make_communicator(), which applies them.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "app/comm_settings.hpp"
#include "comm/factory.hpp"
#include "comm/runtime/mpi_runtime.hpp"

namespace microddp::app {

class Command {
 public:
  virtual ~Command() = default;
  virtual void validate() {}
  virtual int run(const comm::MpiRuntime& mpi) = 0;
  // The limit main gives the MpiRuntime's section watchdog (start-up, agreements, checkpoint
  // exchanges): the command's --comm-timeout where it has one.
  virtual double comm_timeout_s() const { return comm::kDefaultCommTimeoutS; }

  void set_comm_settings(const CommSettings& settings) { comm_settings_ = settings; }

 protected:
  const CommSettings& comm_settings() const { return comm_settings_; }
  // A communicator over every rank for --comm `backend`, with this run's settings.
  std::unique_ptr<comm::Communicator> make_communicator(std::string_view backend, const comm::MpiRuntime& mpi) const {
    return comm::make_communicator(backend, mpi, comm_settings_.config, comm_settings_.faults);
  }

 private:
  CommSettings comm_settings_;
};

// Registration functions, one per command file. Each creates its subcommand under `parent` and
// returns the command object main runs when that subcommand was chosen.
std::unique_ptr<Command> register_train(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_baseline(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_manual(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_bench_compute(CLI::App& bench, CLI::App*& sub);
std::unique_ptr<Command> register_bench_collectives(CLI::App& bench, CLI::App*& sub);
std::unique_ptr<Command> register_make_dataset(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_evaluate(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_export(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_inspect(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_hooks(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_analyze(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_devices(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_ring_schedule(CLI::App& parent, CLI::App*& sub);
std::unique_ptr<Command> register_bench_ddp(CLI::App& bench, CLI::App*& sub);
std::unique_ptr<Command> register_bench_links(CLI::App& bench, CLI::App*& sub);

// The BLAS threads of this rank: --threads (threads_option > 0), else the environment's or the
// allocation's choice (app/blas_threads.hpp), so ranks on one node never oversubscribe its CPUs.
ThreadChoice blas_threads(int threads_option, const comm::MpiRuntime& mpi, const CommSettings& settings);

}  // namespace microddp::app
