// peer_info.cpp — peer descriptions for messages (peer_info.hpp).
#include "peer_info.hpp"

#include <cstdio>

#include "status.hpp"

namespace cuda_emu::nccl {

std::string uuid_string(const unsigned char (&uuid)[16]) {
  std::string s = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(hex, sizeof hex, "%02x", uuid[i]);
    s += hex;
  }
  return s;
}

std::string describe_peer(const PeerInfo& p) {
  return cat("rank ", p.rank, " (host ", p.host_name, ", pid ", p.pid, ", device ", p.device, ")");
}

}  // namespace cuda_emu::nccl
