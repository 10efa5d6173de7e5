// test_cublas_library.cpp — cuBLAS (and cuBLASLt) are opened on first use, not at program start
// (kernels/cuda/cublas_library.hpp), in the real CUDA build. Needs no GPU: loading cuBLAS and
// reading its status names needs no driver. Independent reference: the process's own memory map
// (/proc/self/maps) says whether libcublas is loaded; the status names are cuBLAS's documented ones.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "kernels/cuda/cublas_library.hpp"

namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/libcublas.so") != std::string::npos || line.find("/libcublasLt.so") != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(CublasLibrary, NotLoadedAtStartAndLoadedOnFirstUse) {
  // Linking the CUDA kernels (this test does) must not load cuBLAS: a CPU-only run never pays for it.
  ASSERT_FALSE(cublas_mapped()) << "libcublas is mapped before any GPU use: it is linked, not opened on first use";
  const microddp::kernels::CublasLibrary& lib = microddp::kernels::cublas_library();
  EXPECT_TRUE(cublas_mapped());
  EXPECT_NE(lib.create, nullptr);
  EXPECT_NE(lib.destroy, nullptr);
  EXPECT_NE(lib.set_stream, nullptr);
  EXPECT_NE(lib.set_workspace, nullptr);
  EXPECT_NE(lib.set_math_mode, nullptr);
  EXPECT_NE(lib.get_version, nullptr);
  EXPECT_NE(lib.sgemm, nullptr);
  EXPECT_STREQ(lib.status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(lib.status_name(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
  // The same table on every call (loaded once per process).
  EXPECT_EQ(&lib, &microddp::kernels::cublas_library());
}

// cuBLASLt (the fused GEMM epilogues) is opened the same way, with every entry point CudaOps calls.
TEST(CublasLibrary, CublasLtResolvesEveryEntryPoint) {
  const microddp::kernels::CublasLtLibrary& lt = microddp::kernels::cublaslt_library();
  EXPECT_NE(lt.create, nullptr);
  EXPECT_NE(lt.destroy, nullptr);
  EXPECT_NE(lt.matmul_desc_init, nullptr);
  EXPECT_NE(lt.matmul_desc_set_attribute, nullptr);
  EXPECT_NE(lt.matrix_layout_init, nullptr);
  EXPECT_NE(lt.matmul, nullptr);
  // Initialising a descriptor in caller space needs no GPU: the library's own answer, not ours.
  cublasLtMatmulDescOpaque_t desc{};
  EXPECT_EQ(lt.matmul_desc_init(&desc, sizeof desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(&lt, &microddp::kernels::cublaslt_library());
}

}  // namespace
