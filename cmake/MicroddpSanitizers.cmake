# MicroddpSanitizers.cmake — sanitizer builds (issue 8: ASan+UBSan, and TSan for the communication
# thread).
#
#   -DMICRODDP_SANITIZE=address,undefined   AddressSanitizer (+ LeakSanitizer) and UBSan
#   -DMICRODDP_SANITIZE=thread              ThreadSanitizer
#   (empty, the default)                    no sanitizer
#
# Usage: include() this module before the MICRODDP_CUDA option (it decides that option's default),
# and call microddp_apply_sanitizers() at the end of the top-level CMakeLists.txt, once every target
# exists. It adds the flags to every compiled target of the project (found by walking the directory
# tree, so a target added later is covered without anyone remembering to), and links into every
# executable the runtime defaults of sanitizer_defaults.cpp: options and third-party-only
# suppressions (tests/sanitizers/*.supp), so every MPI rank gets them however it is launched
# (ctest, a test script, mpirun by hand) without any environment variable. Variables in the
# environment (ASAN_OPTIONS, TSAN_OPTIONS, ...) still override those defaults.
include_guard(GLOBAL)

set(MICRODDP_SANITIZE "" CACHE STRING
    "Sanitizers for every target: address,undefined | thread | (empty: none). Turns the CUDA path off by default")
set_property(CACHE MICRODDP_SANITIZE PROPERTY STRINGS "" "address,undefined" "address" "undefined" "thread")

set(MICRODDP_SANITIZE_LIST "")
if(MICRODDP_SANITIZE)
  string(REPLACE "," ";" MICRODDP_SANITIZE_LIST "${MICRODDP_SANITIZE}")
  foreach(s IN LISTS MICRODDP_SANITIZE_LIST)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "MICRODDP_SANITIZE: unknown sanitizer '${s}' (use address,undefined or thread)")
    endif()
  endforeach()
  if("thread" IN_LIST MICRODDP_SANITIZE_LIST AND ("address" IN_LIST MICRODDP_SANITIZE_LIST OR "leak" IN_LIST MICRODDP_SANITIZE_LIST))
    message(FATAL_ERROR "MICRODDP_SANITIZE: thread cannot be combined with address/leak (two shadow-memory runtimes); build them separately")
  endif()
endif()

# Default of MICRODDP_CUDA in a sanitizer build: OFF. nvcc compiles device code with its own
# front end and does not support -fsanitize (it would only reach the host pass through
# -Xcompiler); ASan/TSan also reserve huge shadow mappings that collide with the CUDA driver's
# unified address space (ASan needs protect_shadow_gap=0 and still reports the driver's own
# allocations), and the GPU code has its own checker (compute-sanitizer). The CPU path holds all of
# the host logic these sanitizers are for: communication thread, collectives, buffers, trainer.
if(MICRODDP_SANITIZE)
  set(MICRODDP_SANITIZE_CUDA_DEFAULT OFF)
endif()

# Adds the sanitizer flags to every compiled target under `dir` (recursively).
function(_microddp_sanitize_dir dir)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    get_target_property(imported ${t} IMPORTED)
    if(imported OR NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$"
       OR t STREQUAL "microddp_sanitizer_defaults" OR t STREQUAL "microddp_mpi_leak_scope")
      continue()
    endif()
    target_compile_options(${t} PRIVATE ${_mddp_sanitize_compile})
    if(type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY)$")
      target_link_options(${t} PRIVATE ${_mddp_sanitize_link})
    endif()
    if(type STREQUAL "EXECUTABLE")
      target_link_libraries(${t} PRIVATE microddp_sanitizer_defaults)
      if(TARGET microddp_mpi_leak_scope)
        target_link_libraries(${t} PRIVATE microddp_mpi_leak_scope)
      endif()
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    _microddp_sanitize_dir("${d}")
  endforeach()
endfunction()

function(microddp_apply_sanitizers)
  if(NOT MICRODDP_SANITIZE)
    return()
  endif()
  if(MICRODDP_CUDA)
    message(FATAL_ERROR "MICRODDP_SANITIZE=${MICRODDP_SANITIZE} with MICRODDP_CUDA=ON is not supported (see cmake/MicroddpSanitizers.cmake); pass -DMICRODDP_CUDA=OFF")
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "MICRODDP_SANITIZE needs GCC or Clang")
  endif()

  set(fsan "-fsanitize=${MICRODDP_SANITIZE}")
  # Frame pointers and line tables: readable stacks (function, file:line), and the suppressions
  # match on frames. -g1 (line tables and function names), not -g: full debug info adds nothing to a
  # sanitizer report and made every compile of the ASan build ~15% slower (CI time, docs/design.md).
  set(flags ${fsan} -fno-omit-frame-pointer -g1)
  if("undefined" IN_LIST MICRODDP_SANITIZE_LIST)
    # UB aborts the process (non-zero exit) instead of printing and continuing: the test fails.
    list(APPEND flags -fno-sanitize-recover=all)
  endif()
  set(_mddp_sanitize_compile "$<$<COMPILE_LANGUAGE:C,CXX>:${flags}>")
  set(_mddp_sanitize_link ${fsan})

  # Runtime defaults linked into every executable; the suppression files become string literals.
  set(supp_dir "${PROJECT_SOURCE_DIR}/tests/sanitizers")
  foreach(kind lsan tsan)
    set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${supp_dir}/${kind}.supp")
    file(READ "${supp_dir}/${kind}.supp" text)
    string(REPLACE "\\" "\\\\" text "${text}")
    string(REPLACE "\"" "\\\"" text "${text}")
    string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
    string(TOUPPER ${kind} KIND)
    set(MICRODDP_${KIND}_SUPPRESSIONS "\"${text}\"")
  endforeach()
  configure_file("${supp_dir}/sanitizer_defaults.cpp.in" "${PROJECT_BINARY_DIR}/sanitizer_defaults.cpp" @ONLY)
  add_library(microddp_sanitizer_defaults OBJECT "${PROJECT_BINARY_DIR}/sanitizer_defaults.cpp")
  # With LeakSanitizer (ASan): MPI_Init/MPI_Finalize with leak checking off on the calling thread
  # (tests/sanitizers/mpi_leak_scope.cpp says why: 3.4 s -> 1.3 s per empty 3-rank launch).
  if("address" IN_LIST MICRODDP_SANITIZE_LIST OR "leak" IN_LIST MICRODDP_SANITIZE_LIST)
    add_library(microddp_mpi_leak_scope OBJECT "${supp_dir}/mpi_leak_scope.cpp")
    target_link_libraries(microddp_mpi_leak_scope PUBLIC MPI::MPI_CXX)
  endif()

  _microddp_sanitize_dir("${PROJECT_SOURCE_DIR}")
endfunction()
