// Reference solution of lab 03 (docs/labs/03-ring-allreduce): the teaching ring, unpipelined.
// Try the lab before reading this. The production ring (src/comm/algorithms/ring_collectives.cpp) adds what
// the lab README lists: pipelined segments, any dtype and op, out-of-place buffers, no allocation.
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

void ring_all_reduce(LabComm& comm, float* data, std::int64_t count) {
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  auto begin = [&](int c) { return count * c / n; };  // chunk c is [begin(c), begin(c + 1))
  auto size = [&](int c) { return begin(c + 1) - begin(c); };
  auto mod = [n](int x) { return (x % n + n) % n; };
  const int right = mod(r + 1), left = mod(r - 1);
  std::vector<float> incoming(static_cast<std::size_t>(count / n + 1));
  for (int s = 0; s < n - 1; ++s) {  // reduce-scatter
    const int out = mod(r - s - 1), in = mod(r - s - 2);
    comm.sendrecv(data + begin(out), size(out), right, incoming.data(), size(in), left);
    for (std::int64_t i = 0; i < size(in); ++i) data[begin(in) + i] += incoming[static_cast<std::size_t>(i)];
  }
  for (int s = 0; s < n - 1; ++s) {  // all-gather: rank r starts with the finished chunk r
    const int out = mod(r - s), in = mod(r - s - 1);
    comm.sendrecv(data + begin(out), size(out), right, data + begin(in), size(in), left);
  }
}

}  // namespace microddp::labs
