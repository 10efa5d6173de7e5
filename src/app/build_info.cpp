// build_info.cpp — `microddp --version` from the generated headers (see build_info.hpp and
// src/app/CMakeLists.txt: this file is the only one that includes them, so a new commit recompiles it
// alone).
#include "app/build_info.hpp"

#include "app/build_facts.hpp"
#include "app/git_commit.hpp"

namespace microddp::app {

std::string version_text() {
  std::string s = "microddp " MICRODDP_VERSION " (commit " MICRODDP_GIT_COMMIT ")\n";
  s += "  build      : " MICRODDP_BUILD_TYPE ", " MICRODDP_BUILD_COMPILER;
  const std::string sanitizers = MICRODDP_BUILD_SANITIZERS;
  if (!sanitizers.empty()) s += ", sanitizers " + sanitizers;
  s += "\n  CUDA       : " MICRODDP_BUILD_CUDA "\n";
  s += "  NCCL       : " MICRODDP_BUILD_NCCL "\n";
  s += "  MPI        : " MICRODDP_BUILD_MPI "\n";
  s += "  BLAS       : " MICRODDP_BUILD_BLAS "\n";
  s += "  HDF5       : " MICRODDP_BUILD_HDF5 "\n";
  s += "  zlib       : " MICRODDP_BUILD_ZLIB;  // CLI11 ends the line
  return s;
}

}  // namespace microddp::app
