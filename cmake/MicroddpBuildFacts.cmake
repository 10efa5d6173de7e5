# MicroddpBuildFacts.cmake — what this build has, in words, computed once from what the configure
# found: the configure summary (top-level CMakeLists.txt) prints these, and `microddp --version`
# compiles them in (src/app/build_facts.hpp.in). Included after every dependency was looked for.
#   MICRODDP_FACT_MPI   "Open MPI v4.1.4 (MPI 3.1, /usr/bin/mpicxx)"
#   MICRODDP_FACT_BLAS  "OpenBLAS (/usr/lib/x86_64-linux-gnu/libopenblas.so)"
#   MICRODDP_FACT_HDF5  "1.10.8, parallel (/usr/include/hdf5/openmpi)"
#   MICRODDP_FACT_ZLIB  "1.2.13 (/usr/lib/x86_64-linux-gnu/libz.so)"
#   MICRODDP_FACT_CUDA  "CUDA 12.4.131, architectures 80 90" | "emulated device (...)" | "off (...)"
#   MICRODDP_FACT_NCCL  "2.21.5" | "off (MICRODDP_NCCL=OFF)"
#   MICRODDP_FACT_SANITIZERS  MICRODDP_SANITIZE ("" for none)
include_guard(GLOBAL)

string(REGEX REPLACE ",.*" "" _mddp_mpi_flavour "${MPI_CXX_LIBRARY_VERSION_STRING}")
set(MICRODDP_FACT_MPI "${_mddp_mpi_flavour} (MPI ${MPI_CXX_VERSION}, ${MPI_CXX_COMPILER})")
string(REPLACE ";" ", " MICRODDP_FACT_BLAS "${BLA_VENDOR} (${BLAS_LIBRARIES})")
if(HDF5_IS_PARALLEL)
  set(MICRODDP_FACT_HDF5 "${HDF5_VERSION}, parallel (${HDF5_INCLUDE_DIRS})")
else()
  set(MICRODDP_FACT_HDF5 "${HDF5_VERSION}, serial (${HDF5_INCLUDE_DIRS})")
endif()
string(REPLACE ";" ", " MICRODDP_FACT_ZLIB "${ZLIB_VERSION_STRING} (${ZLIB_LIBRARIES})")
if(MICRODDP_CUDA_EMU)
  set(MICRODDP_FACT_CUDA "emulated device (tests/cuda_emu: no GPU code; for tests)")
elseif(MICRODDP_CUDA)
  string(REPLACE ";" " " _mddp_archs "${CMAKE_CUDA_ARCHITECTURES}")
  set(MICRODDP_FACT_CUDA "CUDA ${CUDAToolkit_VERSION}, architectures ${_mddp_archs}")
else()
  set(MICRODDP_FACT_CUDA "off (MICRODDP_CUDA=OFF)")
endif()
if(MICRODDP_NCCL)
  set(MICRODDP_FACT_NCCL "${NCCL_VERSION}")
else()
  set(MICRODDP_FACT_NCCL "off (MICRODDP_NCCL=OFF)")
endif()
set(MICRODDP_FACT_SANITIZERS "${MICRODDP_SANITIZE}")
