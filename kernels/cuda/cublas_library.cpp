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

#else

// Both set by kernels/CMakeLists.txt from the toolkit found at configure time.
constexpr const char* kSoname = MICRODDP_CUBLAS_SONAME;
constexpr const char* kToolkitPath = MICRODDP_CUBLAS_TOOLKIT_PATH;

void* open_library() {
  // RTLD_LOCAL: nothing else in the process should bind to cuBLAS's symbols by accident.
  if (void* handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL)) return handle;
  const std::string by_name = dlerror();
  if (void* handle = dlopen(kToolkitPath, RTLD_NOW | RTLD_LOCAL)) return handle;
  const std::string by_path = dlerror();
  MDDP_CHECK(false, "cannot load cuBLAS, needed for the GPU compute path: " << by_name << "; and from the toolkit "
                                                                               "this build was configured with: "
                                                                            << by_path
                                                                            << " (put the CUDA libraries on "
                                                                               "LD_LIBRARY_PATH, or use --device cpu)");
  return nullptr;
}

template <typename Fn>
void resolve(void* handle, const char* name, Fn& fn) {
  dlerror();  // clear: a null symbol is not an error by itself
  void* sym = dlsym(handle, name);
  const char* err = dlerror();
  MDDP_CHECK(err == nullptr && sym != nullptr,
             "cuBLAS (" << kSoname << ") has no entry point " << name << (err ? ": " : "") << (err ? err : ""));
  fn = reinterpret_cast<Fn>(sym);
}

CublasLibrary load() {
  void* handle = open_library();
  CublasLibrary lib{};
  resolve(handle, "cublasCreate_v2", lib.create);
  resolve(handle, "cublasDestroy_v2", lib.destroy);
  resolve(handle, "cublasSetStream_v2", lib.set_stream);
  resolve(handle, "cublasSetWorkspace_v2", lib.set_workspace);
  resolve(handle, "cublasSetMathMode", lib.set_math_mode);
  resolve(handle, "cublasGetVersion_v2", lib.get_version);
  resolve(handle, "cublasSgemm_v2", lib.sgemm);
  resolve(handle, "cublasGemmEx", lib.gemm_ex);
  resolve(handle, "cublasGetStatusName", lib.status_name);
  resolve(handle, "cublasGetStatusString", lib.status_string);
  return lib;
}

#endif

}  // namespace

const CublasLibrary& cublas_library() {
  // A throwing initialiser leaves the static uninitialised: the next call tries (and reports) again.
  static const CublasLibrary lib = load();
  return lib;
}

}  // namespace microddp::kernels
