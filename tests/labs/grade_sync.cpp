// grade_sync.cpp — the grader of lab 07 (synchronisation primitives: binomial_broadcast,
// linear_gather, dissemination_barrier; docs/labs/07-sync-primitives).
//
// Checks, on every rank, for roots 0, n-1 and n/2 and counts 0 .. 4099 (fewer than, equal to and not
// divisible by the ranks):
//   * broadcast: every element of every rank equals the root's, bit for bit (non-roots start from a
//     poison value, so an element never written shows); guard elements on both sides untouched; the
//     traffic of the binomial tree: virtual rank v sends the buffer to exactly its children
//     (count floats per child), which a linear broadcast (root sends n-1 times) fails from n = 4;
//   * gather: the root's block i is rank i's input, element for element (inputs encode their rank and
//     index, so a misplaced element is named), also in place; non-roots get recv == nullptr; every
//     non-root sends exactly one message of count floats, the root none;
//   * barrier: one rank enters late (it sleeps kLateMs first) and no rank may leave before the late
//     rank entered. Times are std::chrono::steady_clock, i.e. CLOCK_MONOTONIC, one clock for every
//     process of a host (the graders run on one host), so a leave before an enter is real causality
//     broken, not skew. Each rank sends ceil(log2 n) messages, one per round: a barrier that sends
//     nothing cannot have told anyone it arrived.
// On a failure each failing rank says which case, which element, what was expected and what came
// back, with a hint, and every rank exits 1 (the ranks agree on the verdict after every case, so one
// rank's failure cannot leave the others waiting). Exit 0 and "PASS" when everything holds.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "grader_support.hpp"
#include "labs/lab_api.hpp"

namespace {

using microddp::labs::LabComm;

constexpr std::int64_t kGuard = 16;
constexpr float kGuardValue = -7777.0f;
// How late the late rank enters the barrier. 40 ms is far above MPI's wake-up latency (µs) and the
// scheduler's time slice on a loaded machine (a few ms), so a barrier that lets ranks through early
// shows; it costs 40 ms per case.
constexpr int kLateMs = 40;

std::string fmt(const char* f, auto... args) {
  char buf[640];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}
long long ll(std::int64_t v) { return static_cast<long long>(v); }

// Virtual rank v's children in the binomial tree (see lab_api.hpp): v + m for powers of two
// m < lowbit(v) (root: m < n), v + m < n.
int tree_children(int v, int n) {
  int low = 1;
  if (v == 0) {
    while (low < n) low *= 2;
  } else {
    low = v & -v;
  }
  int k = 0;
  for (int m = low / 2; m >= 1; m /= 2) k += v + m < n ? 1 : 0;
  return k;
}
int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// ---- broadcast ----
float bcast_value(int root, std::int64_t i) { return static_cast<float>((root + 1) * 10000 + i % 9973); }

std::string grade_broadcast(LabComm& comm, int root, std::int64_t count) {
  const int n = comm.size(), r = comm.rank();
  std::vector<float> buf(static_cast<std::size_t>(count + 2 * kGuard), kGuardValue);
  float* data = buf.data() + kGuard;
  const float poison = -static_cast<float>(r + 1);  // a non-root's stale contents
  for (std::int64_t i = 0; i < count; ++i) data[i] = r == root ? bcast_value(root, i) : poison;
  const std::int64_t sent_before = comm.floats_sent();
  const std::string where = fmt("broadcast, root %d, count %lld", root, ll(count));
  try {
    microddp::labs::binomial_broadcast(comm, data, count, root);
  } catch (const std::exception& e) {
    return where + ": the lab function threw: " + e.what();
  }
  for (std::int64_t i = 0; i < count; ++i) {
    if (data[i] != bcast_value(root, i)) {
      return fmt("%s, element %lld: expected %.1f (the root's), got %.1f%s", where.c_str(), ll(i),
                 static_cast<double>(bcast_value(root, i)), static_cast<double>(data[i]),
                 data[i] == poison ? " (this rank's old contents: nothing was received into this element)" : "");
    }
  }
  for (std::int64_t g = 0; g < kGuard; ++g) {
    if (buf[static_cast<std::size_t>(g)] != kGuardValue ||
        buf[static_cast<std::size_t>(kGuard + count + g)] != kGuardValue)
      return where + ": wrote outside the buffer (" +
             (buf[static_cast<std::size_t>(g)] != kGuardValue ? "before" : "after") + " it)";
  }
  const int v = (r - root + n) % n;
  const std::int64_t want = tree_children(v, n) * count, sent = comm.floats_sent() - sent_before;
  if (sent != want) {
    return fmt(
        "%s: sent %lld floats, the binomial tree sends %lld from this rank (virtual rank %d has %d "
        "child(ren), count floats each). Hint: %s",
        where.c_str(), ll(sent), ll(want), v, tree_children(v, n),
        sent > want ? "a rank sends only to v + m for m < lowbit(v) (the root: m < n), not to every rank"
                    : "every rank forwards the buffer to its own children after receiving it");
  }
  return "";
}

// ---- gather ----
// Rank r's element i: encodes (r, i) exactly in fp32 (< 2^24), so a wrong element names its origin.
constexpr std::int64_t kStride = 8192;  // > the largest count graded
float gather_value(int rank, std::int64_t i) { return static_cast<float>((rank + 1) * kStride + i); }

std::string grade_gather(LabComm& comm, int root, std::int64_t count, bool in_place) {
  const int n = comm.size(), r = comm.rank();
  const bool is_root = r == root;
  std::vector<float> send(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) send[static_cast<std::size_t>(i)] = gather_value(r, i);
  std::vector<float> buf(is_root ? static_cast<std::size_t>(n * count + 2 * kGuard) : 0, kGuardValue);
  float* recv = is_root ? buf.data() + kGuard : nullptr;
  const float* src = send.data();
  if (is_root && in_place) {  // the root's own block already in place
    std::copy(send.begin(), send.end(), recv + root * count);
    src = recv + root * count;
  }
  const std::int64_t sent_before = comm.floats_sent(), msgs_before = comm.messages_sent();
  const std::string where =
      fmt("gather%s, root %d, count %lld", in_place ? " (in place at the root)" : "", root, ll(count));
  try {
    microddp::labs::linear_gather(comm, src, count, recv, root);
  } catch (const std::exception& e) {
    return where + ": the lab function threw: " + e.what();
  }
  if (is_root) {
    for (int from = 0; from < n; ++from) {
      for (std::int64_t i = 0; i < count; ++i) {
        const float got = recv[from * count + i];
        if (got == gather_value(from, i)) continue;
        std::string what = "never written";
        const auto code = static_cast<std::int64_t>(got);
        if (got != kGuardValue && got >= static_cast<float>(kStride) && static_cast<float>(code) == got &&
            code / kStride <= n && code % kStride < count)
          what = fmt("rank %lld's element %lld", ll(code / kStride - 1), ll(code % kStride));
        return fmt(
            "%s, block of rank %d, element %lld (recv[%lld]): expected %.1f (rank %d's element %lld), got "
            "%.1f (%s). Hint: rank i's block starts at recv + i*count",
            where.c_str(), from, ll(i), ll(from * count + i), static_cast<double>(gather_value(from, i)), from, ll(i),
            static_cast<double>(got), what.c_str());
      }
    }
    for (std::int64_t g = 0; g < kGuard; ++g) {
      if (buf[static_cast<std::size_t>(g)] != kGuardValue ||
          buf[static_cast<std::size_t>(kGuard + n * count + g)] != kGuardValue)
        return where + ": wrote outside recv (n*count floats)";
    }
  }
  for (std::int64_t i = 0; i < count; ++i) {
    if (send[static_cast<std::size_t>(i)] != gather_value(r, i)) return where + ": changed its send buffer";
  }
  const std::int64_t sent = comm.floats_sent() - sent_before, msgs = comm.messages_sent() - msgs_before;
  const std::int64_t want_floats = is_root || count == 0 ? 0 : count, want_msgs = is_root || count == 0 ? 0 : 1;
  if (sent != want_floats || msgs != want_msgs) {
    return fmt(
        "%s: sent %lld message(s) with %lld floats; %s. Hint: only the non-roots send, each its own "
        "block, straight to the root",
        where.c_str(), ll(msgs), ll(sent),
        is_root ? "the root sends nothing in a gather"
                : (count == 0 ? "a count of 0 moves nothing" : "a non-root sends one message of count floats"));
  }
  return "";
}

// ---- barrier ----
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string grade_barrier(LabComm& comm, int late) {
  const int n = comm.size(), r = comm.rank();
  const std::string where = fmt("barrier, rank %d enters %d ms late", late, kLateMs);
  MPI_Barrier(MPI_COMM_WORLD);  // start together (the grader's own barrier, not the student's)
  if (r == late) std::this_thread::sleep_for(std::chrono::milliseconds(kLateMs));
  const std::int64_t msgs_before = comm.messages_sent();
  const std::int64_t enter = now_ns();
  std::string threw;
  try {
    microddp::labs::dissemination_barrier(comm);
  } catch (const std::exception& e) {
    threw = e.what();
  }
  const std::int64_t leave = now_ns();
  // Exchanged with MPI itself, after the student's barrier returned everywhere.
  std::int64_t late_enter = r == late ? enter : 0;
  MPI_Allreduce(MPI_IN_PLACE, &late_enter, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (!threw.empty()) return where + ": the lab function threw: " + threw;
  if (leave < late_enter) {
    return fmt(
        "%s: rank %d left the barrier %.3f ms BEFORE rank %d entered it. Hint: a rank may leave only "
        "after it has heard, directly or through others, from every rank: after round k it has heard from "
        "the 2^(k+1) - 1 ranks before it, so it needs ceil(log2 n) = %d rounds",
        where.c_str(), r, static_cast<double>(late_enter - leave) * 1e-6, late, ceil_log2(n));
  }
  const std::int64_t msgs = comm.messages_sent() - msgs_before;
  if (msgs != ceil_log2(n)) {
    return fmt("%s: sent %lld message(s); the dissemination barrier sends one per round, ceil(log2 %d) = %d%s",
               where.c_str(), ll(msgs), n, ceil_log2(n),
               msgs == 0 && n > 1 ? " (a rank that sends nothing cannot tell anyone it has arrived)" : "");
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  return microddp::labs::grading::run_lab_comm_grader(
      argc, argv, "07-sync-primitives", "cases (broadcast, gather, barrier)", [](LabComm& comm) {
        const int n = comm.size();
        std::vector<int> roots = {0};
        if (n - 1 != 0) roots.push_back(n - 1);
        if (n / 2 != 0 && n / 2 != n - 1) roots.push_back(n / 2);
        std::vector<std::int64_t> counts = {0, 1, 2, 3, 5, 1000, 4099};
        for (const std::int64_t c : {std::int64_t{n} - 1, std::int64_t{n} + 1, 2 * std::int64_t{n} + 1})
          counts.push_back(c);
        std::vector<std::function<std::string()>> cases;
        for (int root : roots)
          for (std::int64_t c : counts) cases.emplace_back([&comm, root, c] { return grade_broadcast(comm, root, c); });
        for (int root : roots) {
          for (std::int64_t c : counts)
            cases.emplace_back([&comm, root, c] { return grade_gather(comm, root, c, false); });
          cases.emplace_back([&comm, root] { return grade_gather(comm, root, 7, true); });
        }
        for (int late : roots) cases.emplace_back([&comm, late] { return grade_barrier(comm, late); });
        return cases;
      });
}
