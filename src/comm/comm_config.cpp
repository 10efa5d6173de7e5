// comm_config.cpp — parsing of the communication settings (see comm_config.hpp).
#include "comm/comm_config.hpp"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>

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

// A finite number >= 0 times `scale`, or `fallback` (already scaled) when the variable is unset or empty.
double env_nonnegative(const EnvLookup& env, const char* name, double fallback, double scale) {
  const char* v = env(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  MDDP_USAGE_CHECK(end != v && *end == '\0' && std::isfinite(x) && x >= 0,
                   name << "='" << v << "' is not a number >= 0");
  return x * scale;
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
  c.auto_link.alpha_s = env_nonnegative(env, "MICRODDP_AUTO_ALPHA_US", kDefaultAutoLink.alpha_s, 1e-6);
  c.auto_link.beta_s_per_byte =
      env_nonnegative(env, "MICRODDP_AUTO_BETA_NS_PER_BYTE", kDefaultAutoLink.beta_s_per_byte, 1e-9);
  c.auto_link.gamma_s_per_byte =
      env_nonnegative(env, "MICRODDP_AUTO_GAMMA_NS_PER_BYTE", kDefaultAutoLink.gamma_s_per_byte, 1e-9);
  c.chain_broadcast_min_bytes = env_int(env, "MICRODDP_CHAIN_BROADCAST_MIN_BYTES", kDefaultChainBroadcastMinBytes, 1,
                                        LLONG_MAX, "a positive byte count");
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

std::vector<int> parse_node_sizes(std::string_view text, std::string_view what) {
  std::vector<int> sizes;
  if (text.empty()) return sizes;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = text.find(',', pos);
    const std::string item(text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    MDDP_USAGE_CHECK(
        !item.empty() && end == item.c_str() + item.size() && errno != ERANGE && v >= 1 && v <= INT_MAX,
        what << "='" << text << "' must be a node size K or a list of node sizes a,b,c (positive integers)");
    sizes.push_back(static_cast<int>(v));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return sizes;
}

}  // namespace microddp::comm
