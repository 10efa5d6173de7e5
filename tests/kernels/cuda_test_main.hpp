// cuda_test_main.hpp — the main() of the CUDA kernel test programs: without a CUDA device it prints
// "no CUDA device: skipped" and returns 77, which ctest reports as skipped (SKIP_RETURN_CODE), before
// GoogleTest starts; otherwise it names device 0 and runs the tests. Programs that include it define
// main as `return microddp::kernels::test::cuda_test_main(argc, argv);` (the static gtest_main is then
// not linked in: the linker only pulls archive members for undefined symbols).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/cuda/device.hpp"

namespace microddp::kernels::test {

inline int cuda_test_main(int argc, char** argv) {
  if (cuda_device_count() == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;  // MICRODDP_SKIP_CODE: ctest shows the test as skipped
  }
  ::testing::InitGoogleTest(&argc, argv);
  std::printf("# device 0: %s\n", cuda_device_description(0).c_str());
  return RUN_ALL_TESTS();
}

}  // namespace microddp::kernels::test
