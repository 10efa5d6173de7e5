// Reference solution of lab 11 (docs/labs/11-hierarchical): the teaching hierarchical all-reduce,
// unpipelined. Try the lab before reading this. The production one (src/comm/algorithms/
// hier_collectives.cpp) adds what the lab README lists: non-blocking node-local phases, a pipelined
// ring or recursive doubling across nodes, the two-node exchange, any dtype and op, no allocation.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

namespace {

// Part i of `parts` equal parts of [0, count): [begin(i), begin(i + 1)), lengths differ by at most one.
std::int64_t part_begin(std::int64_t count, int parts, int i) { return count * i / parts; }

// Ring all-reduce (lab 03's) of data[0, count) among `group` (ranks, in ring order; this rank at `me`).
void ring_among(LabComm& comm, const std::vector<int>& group, int me, float* data, std::int64_t count) {
  const int n = static_cast<int>(group.size());
  if (n == 1) return;
  auto begin = [&](int c) { return part_begin(count, n, c); };
  auto size = [&](int c) { return begin(c + 1) - begin(c); };
  auto mod = [n](int x) { return (x % n + n) % n; };
  const int right = group[static_cast<std::size_t>(mod(me + 1))], left = group[static_cast<std::size_t>(mod(me - 1))];
  std::vector<float> incoming(static_cast<std::size_t>(count / n + 1));
  for (int s = 0; s < n - 1; ++s) {  // reduce-scatter
    const int out = mod(me - s), in = mod(me - s - 1);
    comm.sendrecv(data + begin(out), size(out), right, incoming.data(), size(in), left);
    for (std::int64_t i = 0; i < size(in); ++i) data[begin(in) + i] += incoming[static_cast<std::size_t>(i)];
  }
  for (int s = 0; s < n - 1; ++s) {  // all-gather
    const int out = mod(me + 1 - s), in = mod(me - s);
    comm.sendrecv(data + begin(out), size(out), right, data + begin(in), size(in), left);
  }
}

}  // namespace

void hierarchical_all_reduce(LabComm& comm, const LabNodes& nodes, float* data, std::int64_t count) {
  if (count == 0) return;  // every rank has the same count: nothing to move anywhere
  const int node = nodes.node_of(comm.rank());
  const std::vector<int>& mine = nodes.ranks[static_cast<std::size_t>(node)];
  const int L = static_cast<int>(mine.size()), l = nodes.local_rank_of(comm.rank());
  int shards = L;  // as many shards as the smallest node has ranks: every node has an owner of each
  for (const auto& other : nodes.ranks) shards = std::min(shards, static_cast<int>(other.size()));
  auto begin = [&](int j) { return part_begin(count, shards, j); };
  auto size = [&](int j) { return j < shards ? begin(j + 1) - begin(j) : 0; };  // local ranks >= shards own none
  const bool owner = l < shards;

  // 1. Reduce-scatter inside the node: in round k send shard (l + k) to its owner, receive this
  // rank's shard from (l - k), add. A rank that owns no shard receives nothing; a shard without an
  // owner is not sent (empty messages keep every round a matched pair of sendrecvs).
  std::vector<float> incoming(static_cast<std::size_t>(size(l)));
  for (int k = 1; k < L; ++k) {
    const int to = (l + k) % L, from = (l - k + L) % L;
    comm.sendrecv(data + (to < shards ? begin(to) : 0), size(to), mine[static_cast<std::size_t>(to)], incoming.data(),
                  size(l), mine[static_cast<std::size_t>(from)]);
    for (std::int64_t i = 0; i < size(l); ++i) data[begin(l) + i] += incoming[static_cast<std::size_t>(i)];
  }

  // 2. All-reduce of shard l across nodes, among the local ranks l of every node.
  if (owner && nodes.count() > 1) {
    std::vector<int> group;
    for (const auto& other : nodes.ranks) group.push_back(other[static_cast<std::size_t>(l)]);
    ring_among(comm, group, node, data + begin(l), size(l));
  }

  // 3. All-gather inside the node: in round k send this rank's shard to (l + k), receive the shard
  // of (l - k) from it.
  for (int k = 1; k < L; ++k) {
    const int to = (l + k) % L, from = (l - k + L) % L;
    comm.sendrecv(data + (owner ? begin(l) : 0), size(l), mine[static_cast<std::size_t>(to)],
                  data + (from < shards ? begin(from) : 0), size(from), mine[static_cast<std::size_t>(from)]);
  }
}

}  // namespace microddp::labs
