// test_hier.cpp — the hierarchical backend's topology (hier_topology.hpp) and its all-reduce on
// every node shape a few ranks can take, even and uneven (two nodes of >= 2 ranks take the two-node
// exchange of hier_collectives.cpp, more nodes the ring), in one job: node sizes come from the
// override (as MICRODDP_HIER_NODE_SIZES gives them), so the cross-node phases run on one machine.
//   * pure: parse_node_sizes / resolve_node_of_rank accept "K" and "a,b,c", refuse the rest;
//   * per shape: the layout every rank reports equals the one computed here from the sizes alone,
//     and the all-reduce is exact (bitwise, integer inputs, collective_checks.hpp) with identical
//     result bytes on all ranks, for sizes below, at and above the shard count, in and out of place.
// The full collective matrix of `hier` runs in collectives_hier* (tests/comm/CMakeLists.txt).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "../collective_checks.hpp"
#include "comm/communicator.hpp"
#include "comm/backends/hier_backend.hpp"
#include "core/error.hpp"

namespace microddp::testing {
namespace {

using comm::HierBackend;
using comm::HierLayout;

TEST(HierTopology, ParsesNodeSizes) {
  EXPECT_TRUE(comm::parse_node_sizes("", "X").empty());
  EXPECT_EQ(comm::parse_node_sizes("2", "X"), (std::vector<int>{2}));
  EXPECT_EQ(comm::parse_node_sizes("3,1,2", "X"), (std::vector<int>{3, 1, 2}));
  for (const char* bad : {"0", "-1", "2,", ",2", "2,,1", "a", "2k", "1 2", "99999999999"}) {
    EXPECT_THROW(comm::parse_node_sizes(bad, "X"), core::UsageError) << bad;
  }
}

TEST(HierTopology, CommConfigCarriesTheOverride) {
  auto env = [](const char* value) {
    return [value](const char* name) -> const char* {
      return std::string(name) == "MICRODDP_HIER_NODE_SIZES" ? value : nullptr;
    };
  };
  EXPECT_EQ(comm::parse_comm_config(env("2,1")).hier_node_sizes, (std::vector<int>{2, 1}));
  EXPECT_TRUE(comm::parse_comm_config(env("")).hier_node_sizes.empty());
  EXPECT_TRUE(comm::parse_comm_config(env(nullptr)).hier_node_sizes.empty());
  EXPECT_THROW(comm::parse_comm_config(env("2,x")), core::UsageError);
}

TEST(HierTopology, ResolvesNodesOfRanks) {
  EXPECT_EQ(comm::resolve_node_of_rank({2}, 5, "X"), (std::vector<int>{0, 0, 1, 1, 2}));
  EXPECT_EQ(comm::resolve_node_of_rank({1, 3}, 4, "X"), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_THROW(comm::resolve_node_of_rank({1, 2}, 4, "X"), core::UsageError);  // 3 ranks listed, 4 run
}

// The layout of world rank `r` under `sizes`, computed independently of hier_topology.cpp.
HierLayout expected_layout(const std::vector<int>& sizes, int n, int r) {
  std::vector<int> per_node;  // ranks of every node, in order
  if (sizes.size() == 1) {
    for (int left = n; left > 0; left -= sizes[0]) per_node.push_back(std::min(left, sizes[0]));
  } else {
    per_node = sizes;
  }
  HierLayout h;
  h.nodes = static_cast<int>(per_node.size());
  h.shards = *std::min_element(per_node.begin(), per_node.end());
  int first = 0;
  for (int i = 0; i < h.nodes; ++i) {
    if (r < first + per_node[static_cast<std::size_t>(i)]) {
      h.node = i;
      h.local_rank = r - first;
      h.local_size = per_node[static_cast<std::size_t>(i)];
      break;
    }
    first += per_node[static_cast<std::size_t>(i)];
  }
  return h;
}

std::vector<std::vector<int>> shapes_for(int n) {
  std::vector<std::vector<int>> s = {{1}, {2}, {n}};
  if (n >= 3) s.insert(s.end(), {{1, n - 1}, {n - 1, 1}});
  if (n == 4) s.insert(s.end(), {{1, 2, 1}, {3}});
  if (n == 5) s.insert(s.end(), {{2, 3}, {3, 2}, {2, 1, 2}});
  return s;
}

TEST(Hier, EveryNodeShapeIsExact) {
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  for (const std::vector<int>& sizes : shapes_for(n)) {
    std::string shape;
    for (int s : sizes) {
      if (!shape.empty()) shape += ',';
      shape += std::to_string(s);
    }
    SCOPED_TRACE("node sizes " + shape);
    comm::CommConfig config;
    config.hier_node_sizes = sizes;
    Communicator comm(std::make_unique<HierBackend>(MPI_COMM_WORLD, config));
    const HierLayout got = comm.backend_as<HierBackend>()->layout(), want = expected_layout(sizes, n, r);
    EXPECT_EQ(got.nodes, want.nodes);
    EXPECT_EQ(got.node, want.node);
    EXPECT_EQ(got.local_rank, want.local_rank);
    EXPECT_EQ(got.local_size, want.local_size);
    EXPECT_EQ(got.shards, want.shards);
    std::vector<Case> cases;
    // Counts: none, fewer than the shards or ranks, odd, and 2^16 + 1 (several pipeline segments
    // need small MICRODDP_RING_SEGMENT_BYTES: collectives_hier_small).
    for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, std::int64_t{n + 1},
                               std::int64_t{1023}, std::int64_t{65537}}) {
      for (bool ip : {false, true}) {
        cases.push_back({CollectiveKind::AllReduce, DType::F32, ReduceOp::Sum, count, ip, 0});
        cases.push_back({CollectiveKind::AllReduce, DType::I32, ReduceOp::Max, count, ip, 0});
      }
      cases.push_back({CollectiveKind::AllReduce, DType::F64, ReduceOp::Mean, count, true, 0});
      cases.push_back({CollectiveKind::AllReduce, DType::F32, ReduceOp::Min, count, false, 0});
    }
    run_cases(comm, cases);
  }
}

}  // namespace
}  // namespace microddp::testing
