// comm_settings.cpp — the process environment as the communication layer's settings.
#include "app/comm_settings.hpp"

#include <cstdlib>
#include <cstring>

#include "app/fault_env.hpp"
#include "kernels/cpu/f16_arrays.hpp"

namespace microddp::app {

CommSettings comm_settings_from_environment() {
  const core::EnvLookup env = [](const char* name) -> const char* { return std::getenv(name); };
  CommSettings s;
  s.config = comm::parse_comm_config(env);
  s.faults = fault_plan_from_env(env);
  const char* simd = env("MICRODDP_F16_SIMD");
  s.f16_simd = !(simd != nullptr && std::strcmp(simd, "0") == 0);
  s.threads = thread_env_from(env);
  return s;
}

void apply_process_settings(const CommSettings& settings) { kernels::set_f16_simd_allowed(settings.f16_simd); }

}  // namespace microddp::app
