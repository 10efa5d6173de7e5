// comm_config.cpp — parsing of the communication settings (see comm_config.hpp).
#include "comm/comm_config.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "comm/hier_topology.hpp"
#include "core/error.hpp"

namespace microddp::comm {

namespace {

// A whole decimal integer in [lo, hi], or `fallback` when the variable is unset. Trailing text,
// an empty value and overflow are refused (std::atoll would have read "4k" as 4).
std::int64_t env_int(const EnvLookup& env, const char* name, std::int64_t fallback, std::int64_t lo, std::int64_t hi,
                     const char* what) {
  const char* v = env(name);
  if (v == nullptr) return fallback;
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  MDDP_USAGE_CHECK(end != v && *end == '\0' && errno != ERANGE && x >= lo && x <= hi,
                   name << "='" << v << "' must be " << what);
  return x;
}

}  // namespace

CommConfig parse_comm_config(const EnvLookup& env) {
  CommConfig c;
  c.ring_segment_bytes =
      env_int(env, "MICRODDP_RING_SEGMENT_BYTES", kDefaultRingSegmentBytes, 1, LLONG_MAX, "a positive byte count");
  c.p2p_max_message_bytes = env_int(env, "MICRODDP_P2P_MAX_MESSAGE_BYTES", kDefaultP2pMaxMessageBytes, 1, INT_MAX,
                                    "a byte count in [1, 2147483647] (one MPI message)");
  c.auto_rd_max_bytes =
      env_int(env, "MICRODDP_AUTO_RD_MAX_BYTES", kDefaultAutoRdMaxBytes, 1, LLONG_MAX, "a positive byte count");
  if (const char* v = env("MICRODDP_NCCL_TIMEOUT_S"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const double t = std::strtod(v, &end);
    MDDP_USAGE_CHECK(end != v && *end == '\0' && t >= 0, "MICRODDP_NCCL_TIMEOUT_S='" << v << "' is not a number >= 0");
    c.nccl_timeout_s = t;
  }
  // Checked against the world size when `hier` is built (resolve_node_of_rank).
  if (const char* v = env("MICRODDP_HIER_NODE_SIZES"); v != nullptr) {
    c.hier_node_sizes = parse_node_sizes(v, "MICRODDP_HIER_NODE_SIZES");
  }
  return c;
}

}  // namespace microddp::comm
