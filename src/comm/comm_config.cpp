// comm_config.cpp — parsing of the communication settings and fault hooks (see comm_config.hpp).
#include "comm/comm_config.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

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

// "RANK:SEQ" or, with a code, "RANK:SEQ[:CODE]"; RANK >= 0, SEQ >= 1, CODE in [0, 255].
void parse_rank_seq(const EnvLookup& env, const char* name, bool with_code, int& rank, std::uint64_t& seq, int* code) {
  const char* v = env(name);
  if (v == nullptr) return;
  long long r = -1, s = 0;
  int c = code ? *code : 0, used = 0;
  const int got = std::sscanf(v, "%lld:%lld%n:%d%n", &r, &s, &used, &c, &used);
  MDDP_USAGE_CHECK(got >= 2 && r >= 0 && r <= INT_MAX && s >= 1 && c >= 0 && c <= 255 && v[used] == '\0' &&
                       (with_code || got == 2),
                   name << "='" << v << "' must be RANK:SEQ" << (with_code ? "[:CODE]" : "") << " with SEQ >= 1"
                        << (with_code ? ", CODE in [0, 255]" : ""));
  rank = static_cast<int>(r);
  seq = static_cast<std::uint64_t>(s);
  if (code) *code = c;
}

}  // namespace

CommConfig parse_comm_config(const EnvLookup& env) {
  CommConfig c;
  c.ring_segment_bytes = env_int(env, "MICRODDP_RING_SEGMENT_BYTES", kDefaultRingSegmentBytes, 1, LLONG_MAX,
                                 "a positive byte count");
  c.p2p_max_message_bytes = env_int(env, "MICRODDP_P2P_MAX_MESSAGE_BYTES", kDefaultP2pMaxMessageBytes, 1, INT_MAX,
                                    "a byte count in [1, 2147483647] (one MPI message)");
  c.auto_rd_max_bytes = env_int(env, "MICRODDP_AUTO_RD_MAX_BYTES", kDefaultAutoRdMaxBytes, 1, LLONG_MAX,
                                "a positive byte count");
  if (const char* v = env("MICRODDP_NCCL_TIMEOUT_S"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const double t = std::strtod(v, &end);
    MDDP_USAGE_CHECK(end != v && *end == '\0' && t >= 0, "MICRODDP_NCCL_TIMEOUT_S='" << v << "' is not a number >= 0");
    c.nccl_timeout_s = t;
  }
  return c;
}

FaultSpec parse_fault_spec(const EnvLookup& env) {
  FaultSpec f;
  parse_rank_seq(env, "MICRODDP_FAULT_EXIT", true, f.exit_rank, f.exit_seq, &f.exit_code);
  parse_rank_seq(env, "MICRODDP_FAULT_EXTRA_COLLECTIVE", false, f.extra_rank, f.extra_seq, nullptr);
  return f;
}

}  // namespace microddp::comm
