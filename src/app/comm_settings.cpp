// comm_settings.cpp — the process environment as the communication layer's settings.
#include "app/comm_settings.hpp"

#include <cstdlib>

#include "app/fault_env.hpp"

namespace microddp::app {

CommSettings comm_settings_from_environment() {
  const core::EnvLookup env = [](const char* name) -> const char* { return std::getenv(name); };
  return CommSettings{comm::parse_comm_config(env), fault_plan_from_env(env)};
}

}  // namespace microddp::app
