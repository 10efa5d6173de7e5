// emu_nccl_mpi.hpp — the MPI side of the emulated NCCL's MPI-launched tests: MPI only launches the
// processes and broadcasts the unique id (the library itself never calls MPI).
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "emu_nccl_test_util.hpp"

namespace emu_test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
// This process's rank among the processes of its host (its GPU index, as the product picks it).
inline int node_local_rank() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int r = 0;
  MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  return r;
}

// Rank 0 creates the id (starting the bootstrap root in its process); everyone gets a copy.
inline ncclResult_t broadcast_unique_id(ncclUniqueId& id) {
  ncclResult_t rc = ncclSuccess;
  if (world_rank() == 0) rc = ncclGetUniqueId(&id);
  int ok = rc == ncclSuccess ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (ok == 0) return rc == ncclSuccess ? ncclSystemError : rc;
  MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, MPI_COMM_WORLD);
  return ncclSuccess;
}

// A communicator over MPI_COMM_WORLD; each rank on GPU `device` (-1: its node-local rank).
inline ncclResult_t init_world_comm(ncclComm_t* comm, int device = -1) {
  if (cudaSetDevice(device >= 0 ? device : node_local_rank()) != cudaSuccess) return ncclUnhandledCudaError;
  ncclUniqueId id;
  if (const ncclResult_t rc = broadcast_unique_id(id); rc != ncclSuccess) return rc;
  return ncclCommInitRank(comm, world_size(), id, world_rank());
}

// True on every rank when all ranks passed the same 64-bit value.
inline bool same_on_all_ranks(std::uint64_t v) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world_size()));
  MPI_Allgather(&v, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (std::uint64_t x : all) {
    if (x != v) return false;
  }
  return true;
}

inline std::uint64_t fnv1a(const std::vector<unsigned char>& bytes) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a 64-bit offset basis / prime
  for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ULL;
  return h;
}

}  // namespace emu_test
