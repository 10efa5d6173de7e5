// A typical wrong answer to lab 11 (docs/labs/11-hierarchical): one leader per node (local rank 0)
// reduces the whole buffer, all-reduces it with the other leaders, and sends it back to its node.
// The sums are right and each node sends as many floats between nodes as the lab's algorithm; but
// one rank carries all of them (and receives L-1 whole buffers inside the node), where the lab's
// reduce-scatter splits them over S ranks, one shard each. The grader must fail it and say "one
// leader per node" (labs.hier_grader_catches_one_leader).
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

void hierarchical_all_reduce(LabComm& comm, const LabNodes& nodes, float* data, std::int64_t count) {
  if (count == 0) return;
  const int node = nodes.node_of(comm.rank()), l = nodes.local_rank_of(comm.rank());
  const std::vector<int>& mine = nodes.ranks[static_cast<std::size_t>(node)];
  const int L = static_cast<int>(mine.size());
  if (l != 0) {
    comm.send(data, count, mine[0]);
    comm.recv(data, count, mine[0]);
    return;
  }
  std::vector<float> incoming(static_cast<std::size_t>(count));
  for (int p = 1; p < L; ++p) {
    comm.recv(incoming.data(), count, mine[static_cast<std::size_t>(p)]);
    for (std::int64_t i = 0; i < count; ++i) data[i] += incoming[static_cast<std::size_t>(i)];
  }
  const int N = nodes.count();
  if (N > 1) {  // a ring among the leaders
    auto begin = [&](int c) { return count * c / N; };
    auto size = [&](int c) { return begin(c + 1) - begin(c); };
    auto mod = [N](int x) { return (x % N + N) % N; };
    const int right = nodes.ranks[static_cast<std::size_t>(mod(node + 1))][0];
    const int left = nodes.ranks[static_cast<std::size_t>(mod(node - 1))][0];
    for (int s = 0; s < N - 1; ++s) {
      const int out = mod(node - s), in = mod(node - s - 1);
      comm.sendrecv(data + begin(out), size(out), right, incoming.data(), size(in), left);
      for (std::int64_t i = 0; i < size(in); ++i) data[begin(in) + i] += incoming[static_cast<std::size_t>(i)];
    }
    for (int s = 0; s < N - 1; ++s) {
      const int out = mod(node + 1 - s), in = mod(node - s);
      comm.sendrecv(data + begin(out), size(out), right, data + begin(in), size(in), left);
    }
  }
  for (int p = 1; p < L; ++p) comm.send(data, count, mine[static_cast<std::size_t>(p)]);
}

}  // namespace microddp::labs
