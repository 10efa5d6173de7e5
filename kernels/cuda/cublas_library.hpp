// cublas_library.hpp — cuBLAS, loaded when the first GPU is used rather than at program start.
//
// Why: libcublas.so pulls in libcublasLt.so (over 500 MB), whose static initialisers cost about
// 0.4 s of CPU in every process that merely links it, GPU or not. A CPU run of 64 ranks paid that
// 64 times before its first step, and each `mpirun` of the test suite paid it once per rank (docs/
// design.md, "cuBLAS on first use"). So the executable does not list libcublas as a dependency:
// cublas_library() opens it with dlopen the first time a CudaOps is made, by its soname (found the
// way the dynamic linker finds the CUDA runtime beside it: RUNPATH, LD_LIBRARY_PATH, ld.so.cache),
// then by the toolkit's directory as configured at build time.
//
// Contract: cublas_library() returns the table of the cuBLAS entry points CudaOps uses, the same
// table on every call (thread-safe; loaded once per process, never unloaded). If the library or an
// entry point cannot be found it throws core::Error naming the library and dlerror()'s reason, on
// every call. In the emulated build (MICRODDP_CUBLAS_LINKED) the table points at the linked
// emulator and nothing is opened.
//
// cuBLASLt (cublaslt_library()): the fused GEMM + epilogue calls (Ops::gemm_bias_act, gemm_bias_grad)
// use libcublasLt directly, opened the same way and for the same reason (it is the 500 MB library
// above), by its own soname; same contract. The descriptors are initialised in caller-provided space
// (the *Init_internal entry points behind cublasLt.h's inline cublasLtMatmulDescInit,
// cublasLtMatrixLayoutInit and cublasLtMatmulPreferenceInit), so a fused call allocates nothing on
// the host either; the algorithm for each problem comes from cublasLtMatmulAlgoGetHeuristic, asked
// once per problem (CudaOps caches it).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

namespace microddp::kernels {

struct CublasLibrary {
  decltype(&::cublasCreate_v2) create;
  decltype(&::cublasDestroy_v2) destroy;
  decltype(&::cublasSetStream_v2) set_stream;
  decltype(&::cublasSetWorkspace_v2) set_workspace;
  decltype(&::cublasSetMathMode) set_math_mode;
  decltype(&::cublasGetVersion_v2) get_version;
  decltype(&::cublasSgemm_v2) sgemm;
  // --precision bf16: bf16 operands, fp32 sums. Spelled out: in C++ the header adds an inline
  // overload (compute type given as a cudaDataType), so &::cublasGemmEx alone is ambiguous.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&::cublasGetStatusName) status_name;
  decltype(&::cublasGetStatusString) status_string;
};

const CublasLibrary& cublas_library();

struct CublasLtLibrary {
  decltype(&::cublasLtCreate) create;
  decltype(&::cublasLtDestroy) destroy;
  decltype(&::cublasLtMatmulDescInit_internal) matmul_desc_init;
  decltype(&::cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute;
  decltype(&::cublasLtMatrixLayoutInit_internal) matrix_layout_init;
  decltype(&::cublasLtMatmulPreferenceInit_internal) preference_init;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preference_set_attribute;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic;
  decltype(&::cublasLtMatmul) matmul;
};

const CublasLtLibrary& cublaslt_library();

}  // namespace microddp::kernels
