// test_args.hpp — the arguments a GoogleTest program takes besides GoogleTest's own: `--NAME=VALUE`
// (e.g. `--backend=ring`, which tests/*/CMakeLists.txt pass to run one suite against every backend).
// GoogleTest keeps the program's arguments (its own flags included) and leaves unknown ones alone,
// so they are read from there, once the program's main has initialised it (mpi_gtest_main.cpp).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace microddp::testing {

// The VALUE of the last `--NAME=VALUE` argument, or `fallback`.
inline std::string test_arg(std::string_view name, std::string_view fallback) {
  const std::string prefix = "--" + std::string(name) + "=";
  std::string value(fallback);
  for (const std::string& a : ::testing::internal::GetArgvs()) {
    if (a.rfind(prefix, 0) == 0) value = a.substr(prefix.size());
  }
  return value;
}

// --backend=NAME: the communication backend a backend-parametrised suite runs on.
inline std::string backend_arg(std::string_view fallback = "mpi") { return test_arg("backend", fallback); }

}  // namespace microddp::testing
