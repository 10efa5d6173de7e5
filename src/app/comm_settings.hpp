// comm_settings.hpp — the communication settings of one microddp run: the tunables
// (comm::CommConfig, read from the variables documented in comm/comm_config.hpp) and the fault plan
// whose communicator points (comm_fault_point) the reliability tests arm (app/fault_env.hpp), and
// the variables that set the BLAS thread count (app/blas_threads.hpp).
// Contract: main calls comm_settings_from_environment() once, after the command line and before MPI
// starts, so a bad value ends every rank with one message and exit code 2 (core::UsageError) and no
// rank can hang; commands build their communicators with the result (Command::make_communicator).
// The library itself never reads these variables.
#pragma once

#include "app/blas_threads.hpp"
#include "comm/comm_config.hpp"
#include "core/fault_plan.hpp"

namespace microddp::app {

struct CommSettings {
  comm::CommConfig config;
  core::FaultPlan faults;
  // MICRODDP_F16_SIMD=0: the fp16 wire format converts with the scalar code only
  // (kernels/cpu/f16_arrays.hpp; same bits, for timing the two side by side).
  bool f16_simd = true;
  // The variables that set the BLAS thread count (app/blas_threads.hpp), checked here like the rest.
  ThreadEnv threads;
};

CommSettings comm_settings_from_environment();
// Applies the settings that are process-wide rather than per communicator (the f16 SIMD switch).
void apply_process_settings(const CommSettings& settings);

}  // namespace microddp::app
