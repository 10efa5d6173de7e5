// Reference solution of lab 02 (docs/labs/02-naive-allreduce). Try the lab before reading this.
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

void naive_all_reduce(LabComm& comm, float* data, std::int64_t count) {
  const int n = comm.size();
  if (comm.rank() != 0) {
    comm.send(data, count, 0);  // my contribution to rank 0 ...
    comm.recv(data, count, 0);  // ... and the sum back
    return;
  }
  std::vector<float> incoming(static_cast<std::size_t>(count));
  for (int from = 1; from < n; ++from) {  // fixed rank order: every run adds in the same order
    comm.recv(incoming.data(), count, from);
    for (std::int64_t i = 0; i < count; ++i) data[i] += incoming[static_cast<std::size_t>(i)];
  }
  for (int to = 1; to < n; ++to) comm.send(data, count, to);
}

}  // namespace microddp::labs
