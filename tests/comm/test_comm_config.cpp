// test_comm_config.cpp — the communication settings parsed from environment variables (comm/comm_config.hpp), with a fake environment: defaults when unset, every variable
// read, and every malformed value refused as a usage error (exit code 2) naming the variable.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "comm/comm_config.hpp"
#include "core/error.hpp"

namespace microddp::comm {
namespace {

// A fake environment: only the given variables are set.
EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// Expects a core::UsageError whose message names `variable`.
template <typename F>
void expect_refused(F parse, const char* variable, const std::string& value) {
  try {
    parse(env_of({{variable, value}}));
    ADD_FAILURE() << variable << "='" << value << "' was accepted";
  } catch (const core::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(variable), std::string::npos) << e.what();
  }
}

TEST(CommConfig, DefaultsWhenNothingIsSet) {
  const CommConfig c = parse_comm_config(env_of({}));
  EXPECT_EQ(c.ring_segment_bytes, std::int64_t{4} << 20);
  EXPECT_EQ(c.p2p_max_message_bytes, std::int64_t{1} << 30);
  EXPECT_EQ(c.auto_rd_max_bytes, std::int64_t{16} << 10);  // measured crossover, docs/allreduce.md
  EXPECT_EQ(c.nccl_timeout_s, 600.0);
  EXPECT_EQ(c.auto_link.alpha_s, kDefaultAutoLink.alpha_s);  // fitted, docs/allreduce.md
  EXPECT_EQ(c.auto_link.beta_s_per_byte, kDefaultAutoLink.beta_s_per_byte);
  EXPECT_EQ(c.auto_link.gamma_s_per_byte, kDefaultAutoLink.gamma_s_per_byte);
  EXPECT_EQ(c.chain_broadcast_min_bytes, kDefaultChainBroadcastMinBytes);
}

TEST(CommConfig, ReadsEveryVariable) {
  const CommConfig c = parse_comm_config(env_of({{"MICRODDP_RING_SEGMENT_BYTES", "1000"},
                                                 {"MICRODDP_P2P_MAX_MESSAGE_BYTES", "4000"},
                                                 {"MICRODDP_AUTO_RD_MAX_BYTES", "1024"},
                                                 {"MICRODDP_NCCL_TIMEOUT_S", "2.5"},
                                                 {"MICRODDP_AUTO_ALPHA_US", "7.5"},
                                                 {"MICRODDP_AUTO_BETA_NS_PER_BYTE", "0.5"},
                                                 {"MICRODDP_AUTO_GAMMA_NS_PER_BYTE", "0"},
                                                 {"MICRODDP_CHAIN_BROADCAST_MIN_BYTES", "4096"}}));
  EXPECT_EQ(c.ring_segment_bytes, 1000);
  EXPECT_EQ(c.p2p_max_message_bytes, 4000);
  EXPECT_EQ(c.auto_rd_max_bytes, 1024);
  EXPECT_EQ(c.nccl_timeout_s, 2.5);
  EXPECT_DOUBLE_EQ(c.auto_link.alpha_s, 7.5e-6);
  EXPECT_DOUBLE_EQ(c.auto_link.beta_s_per_byte, 0.5e-9);
  EXPECT_EQ(c.auto_link.gamma_s_per_byte, 0.0);
  EXPECT_EQ(c.chain_broadcast_min_bytes, 4096);
  EXPECT_EQ(parse_comm_config(env_of({{"MICRODDP_NCCL_TIMEOUT_S", "0"}})).nccl_timeout_s, 0.0);  // no timeout
  EXPECT_EQ(parse_comm_config(env_of({{"MICRODDP_NCCL_TIMEOUT_S", ""}})).nccl_timeout_s, 600.0);
  EXPECT_EQ(parse_comm_config(env_of({{"MICRODDP_P2P_MAX_MESSAGE_BYTES", "2147483647"}})).p2p_max_message_bytes,
            2147483647);
}

TEST(CommConfig, RefusesMalformedValues) {
  for (const char* var :
       {"MICRODDP_RING_SEGMENT_BYTES", "MICRODDP_P2P_MAX_MESSAGE_BYTES", "MICRODDP_AUTO_RD_MAX_BYTES",
        "MICRODDP_CHAIN_BROADCAST_MIN_BYTES"}) {
    for (const char* bad : {"0", "-5", "", "abc", "4k", "12 ", "1e3", "99999999999999999999999"}) {
      expect_refused(parse_comm_config, var, bad);
    }
  }
  expect_refused(parse_comm_config, "MICRODDP_P2P_MAX_MESSAGE_BYTES", "2147483648");  // above one MPI message
  for (const char* bad : {"-1", "x", "5s", "nan"}) expect_refused(parse_comm_config, "MICRODDP_NCCL_TIMEOUT_S", bad);
  for (const char* var : {"MICRODDP_AUTO_ALPHA_US", "MICRODDP_AUTO_BETA_NS_PER_BYTE", "MICRODDP_AUTO_GAMMA_NS_PER_BYTE"}) {
    for (const char* bad : {"-1", "x", "5us", "nan", "inf"}) expect_refused(parse_comm_config, var, bad);
  }
}

}  // namespace
}  // namespace microddp::comm
