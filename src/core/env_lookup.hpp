// env_lookup.hpp — how configuration code reads environment variables without touching the process
// environment itself: it is given a lookup. The app passes std::getenv (app/fault_env.hpp,
// app/comm_settings.hpp); tests pass a map, so parsing is tested without setenv.
#pragma once

#include <functional>

namespace microddp::core {

// The value of an environment variable, or nullptr when it is not set (std::getenv's contract).
using EnvLookup = std::function<const char*(const char* name)>;

}  // namespace microddp::core
