// grader_training.hpp — what the graders of the labs that run inside the trainer share (labs 04-06, 09):
// a few Adam steps of a small model with one strategy, and main(): the lab rows registered as the
// program registers them, the `mpi` communicator, the parts of the grade in order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "ddp/trainer.hpp"
#include "grader_support.hpp"
#include "kernels/ops.hpp"
#include "labs/register_labs.hpp"

namespace microddp::labs::grading {

// What a training run leaves: every step's loss, the final parameters and their layout.
struct TrainRun {
  std::vector<double> losses;
  std::vector<float> params;
  std::vector<model::ParamInfo> layout;
};

// Trains `config` for config.steps steps on the CPU (one BLAS thread) over `comm`; after every step
// `after_step(trainer, step)` may look at the trainer (its GradSync, its model).
template <class AfterStep>
TrainRun train(const ddp::TrainConfig& config, comm::Communicator& comm, AfterStep&& after_step) {
  auto ops = kernels::make_cpu_ops(1);
  ddp::Trainer t(config, comm, *ops);
  t.setup();
  TrainRun run;
  for (std::int64_t s = 0; s < config.steps; ++s) {
    run.losses.push_back(t.step().loss);
    after_step(static_cast<const ddp::Trainer&>(t), s);
  }
  run.params.assign(t.model().param_data(), t.model().param_data() + t.model().flat_count());
  run.layout = t.model().params();
  return run;
}
inline TrainRun train(const ddp::TrainConfig& config, comm::Communicator& comm) {
  return train(config, comm, [](const ddp::Trainer&, std::int64_t) {});
}

// One part of a grade: this rank's failure or "" (an exception is this rank's failure).
struct Part {
  std::function<std::string(comm::Communicator&)> check;
  bool same_everywhere = false;  // every rank computes it identically: only rank 0's failure is printed
  const char* name = nullptr;    // printed with each rank's failure: "FAIL rank r, <name>: ..."
};

// main() of these graders: "grading lab <lab> on <n> rank(s)<note>", the parts in order until one
// fails on some rank, else "PASS: <pass>".
inline int run_trainer_grader(int argc, char** argv, const char* lab, const char* note, const std::vector<Part>& parts,
                              const std::string& pass) {
  register_labs();  // --strategy lab | lab-overlap | lab-bucketed | lab-zero1, as app/main.cpp does
  return run_grader(argc, argv, [&](const comm::MpiRuntime& mpi) {
    auto comm = comm::make_communicator("mpi", mpi);
    say_grading(lab, mpi.size(), note);
    for (const Part& part : parts) {
      if (any_failed(guarded([&] { return part.check(*comm); }), part.same_everywhere, part.name)) return false;
    }
    root_says("PASS: %s\n", pass.c_str());
    return true;
  });
}

}  // namespace microddp::labs::grading
