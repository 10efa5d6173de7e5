// A typical wrong answer to lab 11 (docs/labs/11-hierarchical): a flat ring over all ranks (lab 03's),
// the node layout ignored. The sums are right; the ring crosses between nodes wherever two
// neighbours sit on different nodes, and each crossing carries 2(n-1)/n of the buffer, where the
// hierarchical all-reduce sends 2(N-1)/N per node. The grader must fail it and say "ignores the node
// layout" (labs.hier_grader_catches_flat_ring).
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

void hierarchical_all_reduce(LabComm& comm, const LabNodes& nodes, float* data, std::int64_t count) {
  (void)nodes;
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  auto begin = [&](int c) { return count * c / n; };
  auto size = [&](int c) { return begin(c + 1) - begin(c); };
  auto mod = [n](int x) { return (x % n + n) % n; };
  std::vector<float> incoming(static_cast<std::size_t>(count / n + 1));
  for (int s = 0; s < n - 1; ++s) {
    const int out = mod(r - s), in = mod(r - s - 1);
    comm.sendrecv(data + begin(out), size(out), mod(r + 1), incoming.data(), size(in), mod(r - 1));
    for (std::int64_t i = 0; i < size(in); ++i) data[begin(in) + i] += incoming[static_cast<std::size_t>(i)];
  }
  for (int s = 0; s < n - 1; ++s) {
    const int out = mod(r + 1 - s), in = mod(r - s);
    comm.sendrecv(data + begin(out), size(out), mod(r + 1), data + begin(in), size(in), mod(r - 1));
  }
}

}  // namespace microddp::labs
