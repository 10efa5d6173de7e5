/* control.h — test controls of the emulated CUDA device (never included by product code: tests
 * include it under #if defined(MICRODDP_TEST_CUDA_EMU), which only the emulated build defines).
 * Contract: the settings start from the environment (CUDA_EMU_SCHEDULE, CUDA_EMU_GRID_CAP,
 * CUDA_EMU_STREAM_DELAY_US, CUDA_EMU_LT_REFUSE: docs/cuda_emu.md) and apply to launches / stream operations issued
 * after the call. A device fault (a kernel that failed, e.g. divergent __syncthreads) is sticky as
 * on a GPU; cudaEmuClearFaults() makes the devices usable again so one test process can check
 * several faults. */
#ifndef CUDA_EMU_CONTROL_H
#define CUDA_EMU_CONTROL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "forward" | "reverse" | "shuffle" | "shuffle:SEED"; returns 0, or -1 (unchanged) if malformed. */
int cudaEmuSetSchedule(const char* spec);
/* Caps gridDim.x of every later launch (0 = no cap). */
void cudaEmuSetGridCap(unsigned cap);
/* Delays the start of every later stream operation by `us` microseconds. */
void cudaEmuSetStreamDelayUs(unsigned us);

/* Replaces the emulated cuBLASLt's refusal table (CUDA_EMU_LT_REFUSE's syntax, docs/cuda_emu.md
 * "cuBLAS"; "" refuses nothing): the problems cublasLtMatmulAlgoGetHeuristic then finds no algorithm
 * for, and cublasLtMatmul refuses. Returns 0, or -1 (unchanged, a message on stderr) if malformed. */
int cudaEmuSetLtRefusals(const char* table);

/* The message of the first device fault since the last clear; writes at most `size` bytes
 * (NUL-terminated when size > 0) and returns the message's length (0: no fault). */
size_t cudaEmuFaultMessage(char* buf, size_t size);
void cudaEmuClearFaults(void);

#ifdef __cplusplus
}
#endif

#endif /* CUDA_EMU_CONTROL_H */
