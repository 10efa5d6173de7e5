// host_identity.hpp — which (emulated) host this process runs on, for duplicate-GPU detection: two
// ranks are on the same GPU when their host identities and device UUIDs are equal.
//
// Contract: the hash covers NCCL_HOSTID when set (as NCCL lets a user override it), else the host name,
// the kernel's boot id and the network namespace. The namespace is our addition to NCCL's rule: ranks
// in different network namespaces of one machine are different hosts of an emulated cluster, whose
// emulated GPUs may well carry the same UUIDs. Identical for every thread and process of one host.
#pragma once

#include <cstdint>
#include <string>

namespace cuda_emu::nccl {

struct HostIdentity {
  std::uint64_t hash = 0;
  std::string name;  // host name, for messages
};

HostIdentity this_host();

}  // namespace cuda_emu::nccl
