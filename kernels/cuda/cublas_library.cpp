// cublas_library.cpp — see cublas_library.hpp.
#include "kernels/cuda/cublas_library.hpp"

#include <string>

#include "core/error.hpp"

#ifndef MICRODDP_CUBLAS_LINKED
#include <dlfcn.h>
#endif

namespace microddp::kernels {

namespace {

#ifdef MICRODDP_CUBLAS_LINKED

CublasLibrary load() {
  return CublasLibrary{&::cublasCreate_v2,     &::cublasDestroy_v2,   &::cublasSetStream_v2,
                       &::cublasSetWorkspace_v2, &::cublasSetMathMode, &::cublasGetVersion_v2,
                       &::cublasSgemm_v2,      &::cublasGemmEx,       &::cublasGetStatusName,
                       &::cublasGetStatusString};
}

CublasLtLibrary load_lt() {
  return CublasLtLibrary{&::cublasLtCreate,
                         &::cublasLtDestroy,
                         &::cublasLtMatmulDescInit_internal,
                         &::cublasLtMatmulDescSetAttribute,
                         &::cublasLtMatrixLayoutInit_internal,
                         &::cublasLtMatmulPreferenceInit_internal,
                         &::cublasLtMatmulPreferenceSetAttribute,
                         &::cublasLtMatmulAlgoGetHeuristic,
                         &::cublasLtMatmul};
}

#else

// All set by kernels/CMakeLists.txt from the toolkit found at configure time.
constexpr const char* kSoname = MICRODDP_CUBLAS_SONAME;
constexpr const char* kToolkitPath = MICRODDP_CUBLAS_TOOLKIT_PATH;
constexpr const char* kLtSoname = MICRODDP_CUBLASLT_SONAME;
constexpr const char* kLtToolkitPath = MICRODDP_CUBLASLT_TOOLKIT_PATH;

void* open_library(const char* soname, const char* toolkit_path, const char* what) {
  // RTLD_LOCAL: nothing else in the process should bind to cuBLAS's symbols by accident.
  if (void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL)) return handle;
  const std::string by_name = dlerror();
  if (void* handle = dlopen(toolkit_path, RTLD_NOW | RTLD_LOCAL)) return handle;
  const std::string by_path = dlerror();
  MDDP_CHECK(false, "cannot load " << what << ", needed for the GPU compute path: " << by_name
                                   << "; and from the toolkit this build was configured with: " << by_path
                                   << " (put the CUDA libraries on LD_LIBRARY_PATH, or use --device cpu)");
  return nullptr;
}

template <typename Fn>
void resolve(void* handle, const char* soname, const char* name, Fn& fn) {
  dlerror();  // clear: a null symbol is not an error by itself
  void* sym = dlsym(handle, name);
  const char* err = dlerror();
  MDDP_CHECK(err == nullptr && sym != nullptr,
             soname << " has no entry point " << name << (err ? ": " : "") << (err ? err : ""));
  fn = reinterpret_cast<Fn>(sym);
}

CublasLibrary load() {
  void* handle = open_library(kSoname, kToolkitPath, "cuBLAS");
  const auto entry = [handle](const char* name, auto& fn) { resolve(handle, kSoname, name, fn); };
  CublasLibrary lib{};
  entry("cublasCreate_v2", lib.create);
  entry("cublasDestroy_v2", lib.destroy);
  entry("cublasSetStream_v2", lib.set_stream);
  entry("cublasSetWorkspace_v2", lib.set_workspace);
  entry("cublasSetMathMode", lib.set_math_mode);
  entry("cublasGetVersion_v2", lib.get_version);
  entry("cublasSgemm_v2", lib.sgemm);
  entry("cublasGemmEx", lib.gemm_ex);
  entry("cublasGetStatusName", lib.status_name);
  entry("cublasGetStatusString", lib.status_string);
  return lib;
}

CublasLtLibrary load_lt() {
  void* handle = open_library(kLtSoname, kLtToolkitPath, "cuBLASLt");
  const auto entry = [handle](const char* name, auto& fn) { resolve(handle, kLtSoname, name, fn); };
  CublasLtLibrary lib{};
  entry("cublasLtCreate", lib.create);
  entry("cublasLtDestroy", lib.destroy);
  entry("cublasLtMatmulDescInit_internal", lib.matmul_desc_init);
  entry("cublasLtMatmulDescSetAttribute", lib.matmul_desc_set_attribute);
  entry("cublasLtMatrixLayoutInit_internal", lib.matrix_layout_init);
  entry("cublasLtMatmulPreferenceInit_internal", lib.preference_init);
  entry("cublasLtMatmulPreferenceSetAttribute", lib.preference_set_attribute);
  entry("cublasLtMatmulAlgoGetHeuristic", lib.algo_get_heuristic);
  entry("cublasLtMatmul", lib.matmul);
  return lib;
}

#endif

}  // namespace

const CublasLibrary& cublas_library() {
  // A throwing initialiser leaves the static uninitialised: the next call tries (and reports) again.
  static const CublasLibrary lib = load();
  return lib;
}

const CublasLtLibrary& cublaslt_library() {
  static const CublasLtLibrary lib = load_lt();
  return lib;
}

}  // namespace microddp::kernels
