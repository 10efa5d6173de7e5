// build_info.hpp — what `microddp --version` prints: the version, the git commit the binary was built
// from, and what the build has (CUDA and its architectures, NCCL, MPI, BLAS, HDF5, zlib), as CMake found
// them at configure time (the commit: at build time). No MPI needed: it is printed before MPI starts.
#pragma once

#include <string>

namespace microddp::app {

// "microddp 0.1.0 (commit 1a2b3c4d5e6f)\n  build : Release, GNU 12.2.0\n  CUDA : ...\n ..."
std::string version_text();

}  // namespace microddp::app
