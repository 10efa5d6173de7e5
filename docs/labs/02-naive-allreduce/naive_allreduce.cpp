// Lab 02 — the naive all-reduce: gather to rank 0, add, broadcast back.
// Read docs/labs/02-naive-allreduce/README.md first. Build: cmake --build build; grade:
// ctest --test-dir build -L lab -R naive (after configuring with -DMICRODDP_LAB_GRADERS=ON).
#include <cstdint>
#include <vector>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// Sum `data` (count floats on every rank) over all ranks, in place: afterwards every rank's
// data[i] is the sum of data[i] over the ranks. Rank 0 receives every other rank's buffer (in rank
// order 1, 2, ..., n-1) and adds it to its own; then it sends the result to ranks 1, ..., n-1.
// Available: comm.rank(), comm.size(), comm.send(ptr, count, to), comm.recv(ptr, count, from)
// (src/labs/lab_comm.hpp). Rank 0 needs somewhere to receive into: a std::vector<float> is fine.
void naive_all_reduce(LabComm& comm, float* data, std::int64_t count) {
  // TODO(lab 02): write the all-reduce here, then delete the next line.
  lab_todo("02-naive-allreduce", "naive_all_reduce", "docs/labs/02-naive-allreduce/naive_allreduce.cpp");
  (void)comm;
  (void)data;
  (void)count;
}

}  // namespace microddp::labs
