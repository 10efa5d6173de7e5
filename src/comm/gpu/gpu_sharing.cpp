// gpu_sharing.cpp — see gpu_sharing.hpp.
#include "comm/gpu/gpu_sharing.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"

namespace microddp::comm {

namespace {
// Fixed-size record for one MPI_Allgather (hostnames are cut at 63 characters: messages only).
struct WireIdentity {
  unsigned char uuid[16];
  std::int32_t uses_gpu;
  char host[64];
};
}  // namespace

GpuSharing analyze_gpu_sharing(const std::vector<GpuIdentity>& ranks, int me, UuidText uuid_text) {
  MDDP_CHECK(me >= 0 && static_cast<std::size_t>(me) < ranks.size(),
             "gpu sharing: rank " << me << " of " << ranks.size());
  std::map<std::array<unsigned char, 16>, std::vector<int>> by_gpu;
  GpuSharing s;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].uses_gpu) {
      by_gpu[ranks[r].uuid].push_back(static_cast<int>(r));
    } else {
      ++s.ranks_without_gpu;
    }
  }
  for (const auto& [uuid, users] : by_gpu) {
    const int n = static_cast<int>(users.size());
    if (n > s.max_ranks_per_gpu) s.max_ranks_per_gpu = n;
  }
  // The example names the GPU shared by the lowest rank, so every rank writes the same message.
  int first_shared = -1;
  for (const auto& [uuid, users] : by_gpu) {
    if (users.size() > 1 && (first_shared < 0 || users.front() < first_shared)) first_shared = users.front();
  }
  if (first_shared >= 0) {
    const auto& users = by_gpu[ranks[static_cast<std::size_t>(first_shared)].uuid];
    std::string list;
    for (std::size_t i = 0; i < users.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == users.size() ? " and " : ", ") + std::to_string(users[i]);
    }
    const GpuIdentity& id = ranks[static_cast<std::size_t>(first_shared)];
    s.example = "ranks " + list + " on host " + id.host + " share one GPU";
    if (uuid_text != nullptr) s.example += " (" + uuid_text(id.uuid) + ")";
  }
  if (ranks[static_cast<std::size_t>(me)].uses_gpu) {
    for (int r : by_gpu[ranks[static_cast<std::size_t>(me)].uuid]) {
      if (r != me) s.peers.push_back(r);
    }
  }
  return s;
}

GpuSharing exchange_gpu_identities(const MpiRuntime& runtime, const GpuIdentity& mine, UuidText uuid_text) {
  WireIdentity w{};
  std::memcpy(w.uuid, mine.uuid.data(), sizeof w.uuid);
  w.uses_gpu = mine.uses_gpu ? 1 : 0;
  std::strncpy(w.host, mine.host.c_str(), sizeof w.host - 1);
  std::vector<WireIdentity> all(static_cast<std::size_t>(runtime.size()));
  {
    const auto section = runtime.watch("the GPU identity exchange (which ranks share a GPU)");
    static_assert(sizeof(WireIdentity) < 1024, "one small record per rank");
    MDDP_MPI_CHECK(MPI_Allgather(&w, static_cast<int>(sizeof w), MPI_BYTE, all.data(), static_cast<int>(sizeof w),
                                 MPI_BYTE, runtime.world()));
  }
  std::vector<GpuIdentity> ids(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::memcpy(ids[r].uuid.data(), all[r].uuid, sizeof all[r].uuid);
    ids[r].uses_gpu = all[r].uses_gpu != 0;
    ids[r].host.assign(all[r].host, strnlen(all[r].host, sizeof all[r].host));
  }
  return analyze_gpu_sharing(ids, runtime.rank(), uuid_text);
}

}  // namespace microddp::comm
