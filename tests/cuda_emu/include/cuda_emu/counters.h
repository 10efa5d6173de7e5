/* counters.h — what the emulated CUDA device counted, for tests (never included by product code:
 * tests include it under #if defined(MICRODDP_TEST_CUDA_EMU), which only the emulated build defines).
 * Contract: the counters are process-wide and start at 0; cudaEmuResetCounters() zeroes them (the
 * bytes in use, a level rather than an event count, is kept). A host synchronisation is a call that
 * blocks the host until device work is done *by its contract* (cudaStreamSynchronize,
 * cudaDeviceSynchronize, cudaEventSynchronize, a synchronous copy, a device-to-pageable-host
 * cudaMemcpyAsync, cudaFree, ...), counted even when that work had already finished, so counts do
 * not depend on timing. Bytes are those of the copies as issued.
 * CUDA graphs: an operation issued to a capturing stream is recorded, not launched or copied; it
 * counts only in captured_operations. A cudaGraphLaunch counts once in graph_launches, and its nodes
 * (counted when the launch is accepted) in graph_nodes and the graph_*_nodes by kind; the bytes of
 * its copies and memsets are added to the byte counters then. So kernel_launches, gemm_calls and
 * host_functions are what the host issued one by one, and a test tells the two apart. */
#ifndef CUDA_EMU_COUNTERS_H
#define CUDA_EMU_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cudaEmuCounters {
  uint64_t host_syncs;         /* calls that blocked the host for device work (see above) */
  uint64_t kernel_launches;    /* launches accepted (MDDP_LAUNCH) */
  uint64_t gemm_calls;         /* GEMMs accepted: cublasSgemm, cublasGemmEx, cublasLtMatmul */
  uint64_t host_functions;     /* cudaLaunchHostFunc calls accepted */
  uint64_t stream_event_waits; /* cudaStreamWaitEvent calls accepted: a stream waits on the device */
  uint64_t h2d_pageable_bytes; /* host to device copies, by the kind of host memory */
  uint64_t h2d_pinned_bytes;
  uint64_t d2h_pageable_bytes; /* device to host copies */
  uint64_t d2h_pinned_bytes;
  uint64_t d2d_bytes;                     /* device to device copies */
  uint64_t h2h_bytes;                     /* host to host copies through the CUDA API */
  uint64_t memset_bytes;                  /* cudaMemset / cudaMemsetAsync */
  uint64_t device_allocations;            /* cudaMalloc + cudaMallocAsync */
  uint64_t pinned_allocations;            /* cudaMallocHost + cudaHostAlloc */
  uint64_t device_frees;                  /* cudaFree + cudaFreeAsync */
  uint64_t pinned_frees;                  /* cudaFreeHost */
  uint64_t device_bytes_in_use;           /* device memory allocated now, all devices (not reset) */
  uint64_t fiber_blocks;                  /* blocks run with one fiber per thread */
  uint64_t plain_blocks;                  /* blocks of kernels that never synchronise, run as plain calls */
  uint64_t graph_launches;                /* cudaGraphLaunch calls accepted onto a stream (not into a capture) */
  uint64_t graph_nodes;                   /* nodes those launches replay, all kinds (a child graph: its nodes) */
  uint64_t graph_kernel_nodes;            /* of which kernels (MDDP_LAUNCH) */
  uint64_t graph_gemm_nodes;              /* of which GEMMs (cuBLAS and cuBLASLt calls) */
  uint64_t captured_operations;           /* stream operations recorded into a capture instead of run */
  uint64_t atomic_operations;             /* atomicAdd calls device code made (every thread's, every launch's) */
  uint64_t lt_matmuls;                    /* of gemm_calls, the cublasLtMatmul calls (fused GEMM epilogues) */
  uint64_t lt_algo_matmuls;               /* of lt_matmuls, those given an algorithm (not algo = NULL) */
  uint64_t lt_heuristic_queries;          /* cublasLtMatmulAlgoGetHeuristic calls that succeeded */
  uint64_t lt_heuristic_empty;            /* of those, the ones that found no algorithm (the refusal table) */
  uint64_t lt_workspace_preference_bytes; /* the largest CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES a query
                                             carried (a level, like device_bytes_in_use; reset to 0) */
  uint64_t graph_priorities_dropped;      /* instantiations without cudaGraphInstantiateFlagUseNodePriority of a
                                        graph captured from a stream of non-default priority */
};

void cudaEmuGetCounters(struct cudaEmuCounters* out);
void cudaEmuResetCounters(void);

/* The host synchronisations since the last reset, one "api: count" line per call site kind
 * (e.g. "cudaMemcpyAsync(device->pageable host): 3"), for diagnostics. Writes at most `size` bytes
 * (NUL-terminated when size > 0) and returns the length of the whole report. */
size_t cudaEmuHostSyncReport(char* buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* CUDA_EMU_COUNTERS_H */
