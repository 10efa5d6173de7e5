// comm_settings.cpp — the process environment as the communication layer's settings.
#include "app/comm_settings.hpp"

#include <cstdlib>

namespace microddp::app {

CommSettings comm_settings_from_environment() {
  const comm::EnvLookup env = [](const char* name) -> const char* { return std::getenv(name); };
  return CommSettings{comm::parse_comm_config(env), comm::parse_fault_spec(env)};
}

}  // namespace microddp::app
