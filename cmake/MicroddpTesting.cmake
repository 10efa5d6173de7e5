# MicroddpTesting.cmake — the one helper that registers every microddp test.
#
# microddp_add_test(<name>
#     SOURCES <files...>            test sources (GoogleTest)
#     [LIBS <targets...>]           libraries to link besides GTest
#     [LABELS <labels...>]          unit | mpi | cuda | nccl | slurm | slow
#     [NP <n...>]                   MPI test: one ctest case per rank count, named <name>.np<n>
#     [TIMEOUT <seconds>]           default 120 (a hang is the typical MPI failure)
#     [ARGS <args...>]              extra program arguments
#     [EXECUTABLE <target>]         reuse another test's executable instead of SOURCES (e.g. the
#                                   same suite run against another backend or strategy)
#     [WRAPPER <program>])          MPI tests: every rank runs `<program> <test> <args>` (e.g.
#                                   tests/support/one_gpu_per_rank.sh: each rank sees its own GPU)
#
# microddp_add_script_test(<name> SCRIPT <file>
#     [ARGS <args...>]              the script's arguments (generator expressions allowed)
#     [LABELS <labels...>]
#     [TIMEOUT <seconds>]           default 300
#     [PROCESSORS <n>]              cores the test keeps busy, for ctest -j (default 1)
#     [RUN_SERIAL])                 alone: it starts daemons or needs the machine's cores
# A shell-script test. It runs in the MPI tests' environment (Open MPI may run as root and
# oversubscribe, CPU device); exit code 77 means skipped (the script prints why).
#
# MPI tests link tests/support/mpi_gtest_main.cpp (the harness of mpi_gtest_run.hpp: MPI up, rank-0
# output, results agreed across ranks). GPU tests exit with code 77 when no device is present, which ctest reports as skipped;
# in the emulated CUDA build (MICRODDP_CUDA_EMU) the device is always there, so a cuda/nccl test
# that skips has failed to find it and is reported as failed. There, every test program also gets
# MICRODDP_TEST_CUDA_EMU=1 and the emulator's test headers (cuda_emu/counters.h, control.h).
# Every executable of a cuda/nccl/cuda_emu-labelled test is collected into the target `gpu_tests`
# (microddp_gpu_tests_target(), called once after all test directories): the cuda-emu build preset
# and jobs/gpu_check.sh build `microddp gpu_tests` only, not the ~150 CPU test objects they never run.
# Every test environment sets MICRODDP_DEVICE=cpu (the default of `train --device`): the CPU suite
# stays on the CPU on GPU machines too (it compares `train` with CPU references, bitwise); GPU
# training has its own tests (ddp_device, label cuda) that pass --device / CudaOps explicitly.
include_guard(GLOBAL)
find_package(GTest REQUIRED)

set(MICRODDP_SKIP_CODE 77)

# Open MPI 4 creates its per-user session directory (<tmp>/ompi.<host>.<uid>) on the first mpirun
# with a check-then-mkdir: two mpiruns that start at once on a fresh machine can both see it missing,
# and the loser dies in orte_init ("mkdir ... File exists"), as happened to an np1 test under
# `ctest -j`. So one trivial mpirun runs first (a fixture every test requires); after it the
# directory exists and concurrent mpiruns only create their own job directories inside it.
set(MICRODDP_TEST_ENVIRONMENT
    "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;MICRODDP_DEVICE=cpu")
add_test(NAME mpi_session_dir COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${MICRODDP_MPIEXEC_PREFLAGS} true)
set_tests_properties(mpi_session_dir PROPERTIES FIXTURES_SETUP mpi_session LABELS "mpi;unit" TIMEOUT 60
  ENVIRONMENT "${MICRODDP_TEST_ENVIRONMENT}")

function(microddp_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT;EXECUTABLE;WRAPPER" "SOURCES;LIBS;LABELS;NP;ARGS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(T_EXECUTABLE)
    set(exe ${T_EXECUTABLE})
  else()
    set(exe test_${name})
    add_executable(${exe} ${T_SOURCES})
    target_link_libraries(${exe} PRIVATE ${T_LIBS} GTest::gtest microddp_warnings)
    if(MICRODDP_CUDA_EMU)
      target_compile_definitions(${exe} PRIVATE MICRODDP_TEST_CUDA_EMU=1)
      target_link_libraries(${exe} PRIVATE cuda_emu_testing)
    endif()
  endif()
  if("cuda" IN_LIST T_LABELS OR "nccl" IN_LIST T_LABELS OR "cuda_emu" IN_LIST T_LABELS)
    set_property(GLOBAL APPEND PROPERTY MICRODDP_GPU_TEST_TARGETS ${exe})
  endif()
  set(may_skip TRUE)
  if(MICRODDP_CUDA_EMU AND ("cuda" IN_LIST T_LABELS OR "nccl" IN_LIST T_LABELS))
    set(may_skip FALSE)  # no SKIP_RETURN_CODE: exit 77 is a failure
  endif()
  if(T_NP)
    if(NOT T_EXECUTABLE)
      target_link_libraries(${exe} PRIVATE microddp_test_mpi_main)
    endif()
    foreach(np IN LISTS T_NP)
      set(test_name ${name}.np${np})
      add_test(NAME ${test_name}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MICRODDP_MPIEXEC_PREFLAGS}
                       ${MPIEXEC_PREFLAGS} ${T_WRAPPER} $<TARGET_FILE:${exe}> ${MPIEXEC_POSTFLAGS} ${T_ARGS})
      set_tests_properties(${test_name} PROPERTIES
        LABELS "mpi;${T_LABELS}" TIMEOUT ${T_TIMEOUT} PROCESSORS ${np}
        FIXTURES_REQUIRED mpi_session
        # OpenMPI refuses to run as root without these; harmless for other users (test config only).
        ENVIRONMENT "${MICRODDP_TEST_ENVIRONMENT}")
      if(may_skip)
        set_tests_properties(${test_name} PROPERTIES SKIP_RETURN_CODE ${MICRODDP_SKIP_CODE})
      endif()
    endforeach()
  else()
    if(NOT T_EXECUTABLE)
      target_link_libraries(${exe} PRIVATE GTest::gtest_main)
    endif()
    add_test(NAME ${name} COMMAND ${exe} ${T_ARGS})
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
    if(may_skip)
      set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${MICRODDP_SKIP_CODE})
    endif()
  endif()
endfunction()

# The target `gpu_tests`: every executable the GPU tests run, plus EXTRA targets they need besides
# their own program (helpers they launch). Empty (but present) in a build without CUDA.
function(microddp_gpu_tests_target)
  cmake_parse_arguments(T "" "" "EXTRA" ${ARGN})
  get_property(targets GLOBAL PROPERTY MICRODDP_GPU_TEST_TARGETS)
  list(REMOVE_DUPLICATES targets)
  add_custom_target(gpu_tests)
  foreach(t IN LISTS targets T_EXTRA)
    if(TARGET ${t})
      add_dependencies(gpu_tests ${t})
    endif()
  endforeach()
endfunction()

function(microddp_add_script_test name)
  cmake_parse_arguments(T "RUN_SERIAL" "SCRIPT;TIMEOUT;PROCESSORS" "ARGS;LABELS" ${ARGN})
  if(NOT T_SCRIPT)
    message(FATAL_ERROR "microddp_add_script_test(${name}): SCRIPT is required")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_PROCESSORS)
    set(T_PROCESSORS 1)
  endif()
  add_test(NAME ${name} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/${T_SCRIPT} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT} PROCESSORS ${T_PROCESSORS}
    RUN_SERIAL ${T_RUN_SERIAL} SKIP_RETURN_CODE ${MICRODDP_SKIP_CODE} FIXTURES_REQUIRED mpi_session
    ENVIRONMENT "${MICRODDP_TEST_ENVIRONMENT}")
endfunction()
