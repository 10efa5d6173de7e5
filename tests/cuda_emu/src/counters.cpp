// counters.cpp — the counters behind cuda_emu/counters.h (see counters.hpp).
#include "counters.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "cuda_emu/counters.h"

namespace cuda_emu::counters {

namespace {

struct Atomics {
  std::atomic<std::uint64_t> host_syncs{0}, kernel_launches{0}, gemm_calls{0}, host_functions{0};
  std::atomic<std::uint64_t> stream_event_waits{0};
  std::atomic<std::uint64_t> h2d_pageable{0}, h2d_pinned{0}, d2h_pageable{0}, d2h_pinned{0}, d2d{0}, h2h{0};
  std::atomic<std::uint64_t> memset_bytes{0};
  std::atomic<std::uint64_t> device_allocations{0}, pinned_allocations{0}, device_frees{0}, pinned_frees{0};
  std::atomic<std::uint64_t> device_bytes_in_use{0};
  std::atomic<std::uint64_t> fiber_blocks{0}, plain_blocks{0};
  std::atomic<std::uint64_t> graph_launches{0}, graph_nodes{0}, graph_kernel_nodes{0}, graph_gemm_nodes{0};
  std::atomic<std::uint64_t> captured_operations{0};
  std::atomic<std::uint64_t> atomic_operations{0};
  std::atomic<std::uint64_t> lt_matmuls{0}, lt_algo_matmuls{0}, lt_heuristic_queries{0}, lt_heuristic_empty{0};
  std::atomic<std::uint64_t> lt_workspace_preference_bytes{0};
  std::atomic<std::uint64_t> graph_priorities_dropped{0};
};

// Never destroyed (as the engine): stream workers may still count while the process exits.
Atomics& g() {
  static Atomics* a = new Atomics();
  return *a;
}

std::mutex& breakdown_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::map<std::string, std::uint64_t>& breakdown() {
  static auto* m = new std::map<std::string, std::uint64_t>();
  return *m;
}

void add(std::atomic<std::uint64_t>& c, std::uint64_t n) { c.fetch_add(n, std::memory_order_relaxed); }

}  // namespace

void host_sync(const char* what) {
  add(g().host_syncs, 1);
  const std::lock_guard<std::mutex> lock(breakdown_mutex());
  ++breakdown()[what];
}
void kernel_launch() { add(g().kernel_launches, 1); }
void gemm() { add(g().gemm_calls, 1); }
void lt_matmul(bool with_algo) {
  add(g().lt_matmuls, 1);
  if (with_algo) add(g().lt_algo_matmuls, 1);
}
void lt_heuristic(bool found, std::uint64_t workspace_preference_bytes) {
  add(g().lt_heuristic_queries, 1);
  if (!found) add(g().lt_heuristic_empty, 1);
  std::uint64_t seen = g().lt_workspace_preference_bytes.load(std::memory_order_relaxed);
  while (seen < workspace_preference_bytes && !g().lt_workspace_preference_bytes.compare_exchange_weak(
                                                  seen, workspace_preference_bytes, std::memory_order_relaxed)) {}
}
void graph_priorities_dropped() { add(g().graph_priorities_dropped, 1); }
void host_function() { add(g().host_functions, 1); }
void stream_event_wait() { add(g().stream_event_waits, 1); }

void copy(Copy kind, std::size_t bytes) {
  switch (kind) {
    case Copy::HostToDevicePageable:
      add(g().h2d_pageable, bytes);
      break;
    case Copy::HostToDevicePinned:
      add(g().h2d_pinned, bytes);
      break;
    case Copy::DeviceToHostPageable:
      add(g().d2h_pageable, bytes);
      break;
    case Copy::DeviceToHostPinned:
      add(g().d2h_pinned, bytes);
      break;
    case Copy::DeviceToDevice:
      add(g().d2d, bytes);
      break;
    case Copy::HostToHost:
      add(g().h2h, bytes);
      break;
  }
}

void memset(std::size_t bytes) { add(g().memset_bytes, bytes); }

void allocated(bool pinned, std::size_t device_bytes) {
  add(pinned ? g().pinned_allocations : g().device_allocations, 1);
  add(g().device_bytes_in_use, device_bytes);
}

void freed(bool pinned, std::size_t device_bytes) {
  add(pinned ? g().pinned_frees : g().device_frees, 1);
  g().device_bytes_in_use.fetch_sub(device_bytes, std::memory_order_relaxed);
}

void blocks(bool fibers, std::uint64_t count) { add(fibers ? g().fiber_blocks : g().plain_blocks, count); }

void atomic_operation() { add(g().atomic_operations, 1); }

void graph_launch() { add(g().graph_launches, 1); }
void captured_operation() { add(g().captured_operations, 1); }
void replayed_node(Replayed kind) {
  add(g().graph_nodes, 1);
  if (kind == Replayed::Kernel) add(g().graph_kernel_nodes, 1);
  if (kind == Replayed::Gemm) add(g().graph_gemm_nodes, 1);
}

}  // namespace cuda_emu::counters

extern "C" {

void cudaEmuGetCounters(struct cudaEmuCounters* out) {
  using cuda_emu::counters::g;
  if (out == nullptr) return;
  auto r = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  const auto& a = g();
  out->host_syncs = r(a.host_syncs);
  out->kernel_launches = r(a.kernel_launches);
  out->gemm_calls = r(a.gemm_calls);
  out->host_functions = r(a.host_functions);
  out->stream_event_waits = r(a.stream_event_waits);
  out->h2d_pageable_bytes = r(a.h2d_pageable);
  out->h2d_pinned_bytes = r(a.h2d_pinned);
  out->d2h_pageable_bytes = r(a.d2h_pageable);
  out->d2h_pinned_bytes = r(a.d2h_pinned);
  out->d2d_bytes = r(a.d2d);
  out->h2h_bytes = r(a.h2h);
  out->memset_bytes = r(a.memset_bytes);
  out->device_allocations = r(a.device_allocations);
  out->pinned_allocations = r(a.pinned_allocations);
  out->device_frees = r(a.device_frees);
  out->pinned_frees = r(a.pinned_frees);
  out->device_bytes_in_use = r(a.device_bytes_in_use);
  out->fiber_blocks = r(a.fiber_blocks);
  out->plain_blocks = r(a.plain_blocks);
  out->graph_launches = r(a.graph_launches);
  out->graph_nodes = r(a.graph_nodes);
  out->graph_kernel_nodes = r(a.graph_kernel_nodes);
  out->graph_gemm_nodes = r(a.graph_gemm_nodes);
  out->captured_operations = r(a.captured_operations);
  out->atomic_operations = r(a.atomic_operations);
  out->lt_matmuls = r(a.lt_matmuls);
  out->lt_algo_matmuls = r(a.lt_algo_matmuls);
  out->lt_heuristic_queries = r(a.lt_heuristic_queries);
  out->lt_heuristic_empty = r(a.lt_heuristic_empty);
  out->lt_workspace_preference_bytes = r(a.lt_workspace_preference_bytes);
  out->graph_priorities_dropped = r(a.graph_priorities_dropped);
}

void cudaEmuResetCounters(void) {
  using cuda_emu::counters::g;
  auto& a = g();
  for (std::atomic<std::uint64_t>* c :
       {&a.host_syncs, &a.kernel_launches, &a.gemm_calls, &a.host_functions, &a.stream_event_waits, &a.h2d_pageable,
        &a.h2d_pinned, &a.d2h_pageable, &a.d2h_pinned, &a.d2d, &a.h2h, &a.memset_bytes, &a.device_allocations,
        &a.pinned_allocations, &a.device_frees, &a.pinned_frees, &a.fiber_blocks, &a.plain_blocks}) {
    c->store(0, std::memory_order_relaxed);
  }
  for (std::atomic<std::uint64_t>* c :
       {&a.graph_launches, &a.graph_nodes, &a.graph_kernel_nodes, &a.graph_gemm_nodes, &a.captured_operations,
        &a.atomic_operations, &a.lt_matmuls, &a.lt_algo_matmuls, &a.lt_heuristic_queries, &a.lt_heuristic_empty,
        &a.lt_workspace_preference_bytes, &a.graph_priorities_dropped}) {
    c->store(0, std::memory_order_relaxed);
  }
  const std::lock_guard<std::mutex> lock(cuda_emu::counters::breakdown_mutex());
  cuda_emu::counters::breakdown().clear();
}

size_t cudaEmuHostSyncReport(char* buf, size_t size);

}  // extern "C"

namespace cuda_emu::counters {

void print_report() {
  cudaEmuCounters c{};
  cudaEmuGetCounters(&c);
  std::string breakdown(cudaEmuHostSyncReport(nullptr, 0) + 1, '\0');
  breakdown.resize(cudaEmuHostSyncReport(breakdown.data(), breakdown.size()));
  std::fprintf(stderr,
               "cuda_emu counters (emulated device, pid %ld): host_syncs=%llu kernel_launches=%llu gemm_calls=%llu "
               "host_functions=%llu h2d_pageable=%llu h2d_pinned=%llu d2h_pageable=%llu d2h_pinned=%llu d2d=%llu "
               "h2h=%llu memset=%llu device_allocations=%llu pinned_allocations=%llu fiber_blocks=%llu "
               "plain_blocks=%llu atomic_operations=%llu lt_matmuls=%llu\n%s",
               static_cast<long>(getpid()), static_cast<unsigned long long>(c.host_syncs),
               static_cast<unsigned long long>(c.kernel_launches), static_cast<unsigned long long>(c.gemm_calls),
               static_cast<unsigned long long>(c.host_functions), static_cast<unsigned long long>(c.h2d_pageable_bytes),
               static_cast<unsigned long long>(c.h2d_pinned_bytes),
               static_cast<unsigned long long>(c.d2h_pageable_bytes),
               static_cast<unsigned long long>(c.d2h_pinned_bytes), static_cast<unsigned long long>(c.d2d_bytes),
               static_cast<unsigned long long>(c.h2h_bytes), static_cast<unsigned long long>(c.memset_bytes),
               static_cast<unsigned long long>(c.device_allocations),
               static_cast<unsigned long long>(c.pinned_allocations), static_cast<unsigned long long>(c.fiber_blocks),
               static_cast<unsigned long long>(c.plain_blocks), static_cast<unsigned long long>(c.atomic_operations),
               static_cast<unsigned long long>(c.lt_matmuls), breakdown.c_str());
  std::fprintf(stderr,
               "cuda_emu graph counters (pid %ld): graph_launches=%llu graph_nodes=%llu graph_kernel_nodes=%llu "
               "graph_gemm_nodes=%llu captured_operations=%llu graph_priorities_dropped=%llu\n",
               static_cast<long>(getpid()), static_cast<unsigned long long>(c.graph_launches),
               static_cast<unsigned long long>(c.graph_nodes), static_cast<unsigned long long>(c.graph_kernel_nodes),
               static_cast<unsigned long long>(c.graph_gemm_nodes),
               static_cast<unsigned long long>(c.captured_operations),
               static_cast<unsigned long long>(c.graph_priorities_dropped));
  std::fprintf(stderr,
               "cuda_emu cuBLASLt counters (pid %ld): lt_algo_matmuls=%llu lt_heuristic_queries=%llu "
               "lt_heuristic_empty=%llu lt_workspace_preference_bytes=%llu\n",
               static_cast<long>(getpid()), static_cast<unsigned long long>(c.lt_algo_matmuls),
               static_cast<unsigned long long>(c.lt_heuristic_queries),
               static_cast<unsigned long long>(c.lt_heuristic_empty),
               static_cast<unsigned long long>(c.lt_workspace_preference_bytes));
}

}  // namespace cuda_emu::counters

extern "C" {

size_t cudaEmuHostSyncReport(char* buf, size_t size) {
  std::string text;
  {
    const std::lock_guard<std::mutex> lock(cuda_emu::counters::breakdown_mutex());
    for (const auto& [what, count] : cuda_emu::counters::breakdown()) {
      text += what + ": " + std::to_string(count) + "\n";
    }
  }
  if (size > 0) {
    const std::size_t n = text.size() < size - 1 ? text.size() : size - 1;
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return text.size();
}

}  // extern "C"
