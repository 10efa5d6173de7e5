# MicroddpCuda.cmake — CUDA sources (.cu) of a target, for either CUDA build.
#
# microddp_cuda_sources(<target> <sources...>)
#   adds the sources to <target> (PRIVATE). With nvcc (MICRODDP_CUDA) they are CUDA sources as usual;
#   in the emulated build (MICRODDP_CUDA_EMU) they are compiled as host C++ with the emulator's device
#   prelude force-included (tests/cuda_emu: cuda_emu_compile_kernel_sources), which provides the host
#   launcher behind MDDP_LAUNCH (kernels/cuda/launch.hpp). Call it from the directory of <target>.
include_guard(GLOBAL)

function(microddp_cuda_sources target)
  target_sources(${target} PRIVATE ${ARGN})
  if(MICRODDP_CUDA_EMU)
    cuda_emu_compile_kernel_sources(${target} ${ARGN})
  endif()
endfunction()
