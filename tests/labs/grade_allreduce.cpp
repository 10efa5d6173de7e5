// grade_allreduce.cpp — the grader of labs 02 (naive all-reduce) and 03 (ring all-reduce).
//
// Runs the lab's function (LAB_RING 0: naive_all_reduce, 1: ring_all_reduce) on every rank for
// counts from 0 to a few thousand — smaller than, equal to and just above the number of ranks, and
// not divisible by it — with inputs whose sums are exact in fp32 (small integers), and checks:
//   * every element on every rank equals the closed-form sum (n(n+1)/2 times the element's pattern);
//   * nothing was written outside [data, data + count) (guard elements on both sides);
//   * the traffic is the algorithm's: naive — every rank but 0 sends exactly `count` floats, rank 0
//     (n-1)·count; ring — every rank sends at most 2(n-1)·ceil(count/n) floats (2(n-1)/n of the
//     buffer, whatever n is), which a gather-to-one-rank cannot do.
// On a failure it says which rank, which count and which element, what was expected and what came
// back, with a hint, and exits 1 on every rank (the ranks agree on the verdict after each count, so
// one rank's failure cannot leave the others waiting). Exit 0 and "PASS" when everything holds.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "grader_support.hpp"
#include "labs/lab_api.hpp"

#ifndef LAB_RING
#error "compile with -DLAB_RING=0 (lab 02, naive) or -DLAB_RING=1 (lab 03, ring)"
#endif

namespace {

using microddp::labs::LabComm;

constexpr std::int64_t kGuard = 16;
constexpr float kGuardValue = -7777.0f;
constexpr const char* kLab = LAB_RING ? "03-ring-allreduce (ring_all_reduce)" : "02-naive-allreduce (naive_all_reduce)";

// Rank r's input: (r + 1) * pattern(i), pattern(i) = i % 13 + 1: small integers, exact sums.
float input(int rank, std::int64_t i) { return static_cast<float>((rank + 1) * (i % 13 + 1)); }
float expected(int n, std::int64_t i) { return static_cast<float>(n * (n + 1) / 2 * (i % 13 + 1)); }

// One count on this rank: "" when it passed, else what went wrong.
std::string grade_one(LabComm& comm, std::int64_t count) {
  const int n = comm.size(), r = comm.rank();
  std::vector<float> buf(static_cast<std::size_t>(count + 2 * kGuard), kGuardValue);
  float* data = buf.data() + kGuard;
  for (std::int64_t i = 0; i < count; ++i) data[i] = input(r, i);
  const std::int64_t sent_before = comm.floats_sent();
  char msg[512];
  try {
#if LAB_RING
    microddp::labs::ring_all_reduce(comm, data, count);
#else
    microddp::labs::naive_all_reduce(comm, data, count);
#endif
  } catch (const std::exception& e) {
    std::snprintf(msg, sizeof msg, "count %lld: the lab function threw: %s", static_cast<long long>(count), e.what());
    return msg;
  }
  for (std::int64_t i = 0; i < count; ++i) {
    if (data[i] != expected(n, i)) {
      std::snprintf(msg, sizeof msg,
                    "count %lld, element %lld: expected %.1f (the sum over %d ranks of (rank + 1) * %lld), got %.1f%s",
                    static_cast<long long>(count), static_cast<long long>(i), static_cast<double>(expected(n, i)), n,
                    static_cast<long long>(i % 13 + 1), static_cast<double>(data[i]),
                    data[i] == input(r, i) ? " (this rank's own input: not reduced at all)" : "");
      return msg;
    }
  }
  for (std::int64_t g = 0; g < kGuard; ++g) {
    if (buf[static_cast<std::size_t>(g)] != kGuardValue ||
        buf[static_cast<std::size_t>(kGuard + count + g)] != kGuardValue) {
      std::snprintf(msg, sizeof msg, "count %lld: wrote outside the buffer (%s it)", static_cast<long long>(count),
                    buf[static_cast<std::size_t>(g)] != kGuardValue ? "before" : "after");
      return msg;
    }
  }
  const std::int64_t sent = comm.floats_sent() - sent_before;
  if (LAB_RING) {
    const std::int64_t chunk = (count + n - 1) / n, most = 2 * (n - 1) * chunk;
    if (sent > most) {
      std::snprintf(msg, sizeof msg,
                    "count %lld: sent %lld floats; a ring sends at most 2(n-1) chunks of ceil(count/n) = %lld "
                    "(2(n-1)/n of the buffer). Is every step sending one chunk, not the whole buffer?",
                    static_cast<long long>(count), static_cast<long long>(sent), static_cast<long long>(most));
      return msg;
    }
  } else {
    const std::int64_t want = r == 0 ? (n - 1) * count : (n == 1 ? 0 : count);
    if (sent != want) {
      std::snprintf(msg, sizeof msg, "count %lld: sent %lld floats, the naive algorithm sends %lld from this rank (%s)",
                    static_cast<long long>(count), static_cast<long long>(sent), static_cast<long long>(want),
                    r == 0 ? "rank 0: the sum to each of the n-1 others" : "its buffer to rank 0, once");
      return msg;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  return microddp::labs::grading::run_lab_comm_grader(argc, argv, kLab, "counts", [](LabComm& comm) {
    const int n = comm.size();
    std::vector<std::function<std::string()>> cases;
    for (const std::int64_t count : {0, 1, 2, 3, 5, n - 1, n, n + 1, 2 * n + 1, 64, 1000, 4099}) {
      if (count >= 0) cases.emplace_back([&comm, count] { return grade_one(comm, count); });
    }
    return cases;
  });
}
