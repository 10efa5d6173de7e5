// grade_hierarchical.cpp — the grader of lab 11 (hierarchical_all_reduce; docs/labs/11-hierarchical).
//
// For every node layout of the job's ranks below (one node, one rank per node, even and uneven
// nodes: at 4 ranks 4, 2+2, 3+1, 1+3, 1+1+1+1, 1+2+1), the nodes computed by the production code
// (comm::HierTopology, as `--comm lab-hier` computes them from MICRODDP_HIER_NODE_SIZES) and handed
// to the lab as the seam hands them (lab_nodes), and for counts 0 .. 4099 (smaller than, equal to
// and not divisible by the ranks and the shards), with inputs whose sums are exact in fp32 in any
// order (small integers), it checks on every rank (the traffic from 64 floats on, see kTrafficMinCount):
//   * every element equals the closed-form sum n(n+1)/2 times the element's pattern;
//   * nothing was written outside [data, data + count) (guard elements on both sides);
//   * the traffic between nodes is what the algorithm allows (LabComm counts the floats sent to each
//     peer): with S = the smallest node's rank count, each node sends at most S shard rings' worth,
//     S·2(N-1)·ceil(ceil(count/S)/N) floats to other nodes — about 2(N-1)/N of the buffer, where a
//     flat all-reduce that ignores the nodes sends 2(n-1)/n (named "ignores the node layout"); and
//     within that, each owner (local rank l < S) at most its own shard's 2(N-1)·ceil(ceil(count/S)/N),
//     the others nothing (named "one leader per node" when a single rank carries the node's traffic).
// Then, per layout, one count with fractional inputs: every rank must end with the same bits (DDP's
// replicas must stay identical), close to the float64 sum. Last, through the seam: an all-reduce of
// the communicator `--comm lab-hier` builds with MICRODDP_HIER_NODE_SIZES=2 (CommConfig::hier_node_sizes)
// is exact, in and out of place.
// On a failure each failing rank says which layout, count and element, what was expected and what
// came back, with a hint (its first failure in count order), and every rank exits 1 (the ranks agree
// on the verdict after every layout, so one rank's failure cannot leave the others waiting). Exit 0
// and "PASS" when everything holds. The counts of a layout run back to back, with one exchange of
// the traffic after them: a verdict per count would cost n barriers each, seconds on a loaded machine.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "comm/algorithms/hier_topology.hpp"
#include "comm/factory.hpp"
#include "grader_support.hpp"
#include "labs/lab_api.hpp"
#include "labs/lab_hier.hpp"
#include "labs/register_labs.hpp"

namespace {

using microddp::labs::LabComm;
using microddp::labs::LabNodes;
namespace grading = microddp::labs::grading;

constexpr const char* kLab = "11-hierarchical (hierarchical_all_reduce)";
constexpr std::int64_t kGuard = 16;
constexpr float kGuardValue = -7777.0f;
// Below this count the rounding of shards and chunks (up to one float per chunk) blurs the bounds,
// and a mistake would be given the wrong name: at count 2 on 2 + 2 a flat ring stays within the
// node's bound (3 floats of 4) and exceeds only the owner's (2). From 64 on (chunks of 16 at 4
// ranks) a flat ring sends 1.5x the node's bound at 2 + 2, one leader 2x the owner's.
constexpr std::int64_t kTrafficMinCount = 64;
constexpr std::int64_t kLargestMessageBytes = std::int64_t{1} << 30;  // the production default

std::string fmt(const char* f, auto... args) {
  char buf[900];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}
long long ll(std::int64_t v) { return static_cast<long long>(v); }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Rank r's input: (r + 1) * pattern(i), pattern(i) = i % 13 + 1: small integers, exact sums in any order.
std::int64_t pattern(std::int64_t i) { return i % 13 + 1; }
float input(int rank, std::int64_t i) { return static_cast<float>((rank + 1) * pattern(i)); }

// The node sizes graded at n ranks: one node, one rank per node, and the even and uneven splits.
std::vector<std::vector<int>> layouts(int n) {
  switch (n) {
    case 1:
      return {{1}};
    case 2:
      return {{2}, {1, 1}};
    case 3:
      return {{3}, {1, 1, 1}, {2, 1}, {1, 2}};
    case 4:
      return {{4}, {2, 2}, {3, 1}, {1, 3}, {1, 1, 1, 1}, {1, 2, 1}};
    default: {  // more ranks than the tests launch: nodes of 2 (the last one smaller) and of 1
      return {{n}, {2}, std::vector<int>(static_cast<std::size_t>(n), 1)};
    }
  }
}

std::string layout_text(const LabNodes& nodes) {
  std::string s;
  for (const auto& node : nodes.ranks) {
    if (!s.empty()) s += " + ";
    s += std::to_string(node.size());
  }
  return s + (nodes.count() == 1 ? " (one node)" : " ranks");
}

// What every rank knows about one layout.
struct Layout {
  LabNodes nodes;
  std::string text;  // "2 + 2 ranks"
  int node = 0, local = 0, shards = 1;
  bool owner() const { return local < shards; }
};

Layout describe(const LabNodes& nodes, int rank) {
  Layout h{nodes, layout_text(nodes)};
  h.node = nodes.node_of(rank);
  h.local = nodes.local_rank_of(rank);
  h.shards = static_cast<int>(nodes.ranks.front().size());
  for (const auto& node : nodes.ranks) h.shards = std::min(h.shards, static_cast<int>(node.size()));
  return h;
}

// The production topology's nodes must be the ones the sizes say: consecutive ranks, in order.
std::string check_nodes(const LabNodes& nodes, const std::vector<int>& sizes, int n) {
  std::vector<std::vector<int>> want;
  for (int r = 0; r < n;) {
    const int size = sizes.size() == 1 ? sizes[0] : sizes[want.size()];
    want.emplace_back();
    for (int k = 0; k < size && r < n; ++k) want.back().push_back(r++);
  }
  if (nodes.ranks != want) return "the nodes handed to the lab are not the ones the sizes say (a seam bug, not yours)";
  return "";
}

// One count on one layout, run on this rank: what went wrong in the values (or "") and the floats
// this rank sent to ranks on other nodes. No collective of the grader's own in here, so the counts
// of a layout run back to back and the ranks compare their traffic once (grade_layout).
struct Run {
  std::string failure;
  std::int64_t cross = 0;
  bool threw = false;
};

Run run_one(LabComm& comm, const Layout& h, std::int64_t count) {
  const int n = comm.size(), r = comm.rank(), N = h.nodes.count();
  std::vector<float> buf(static_cast<std::size_t>(count + 2 * kGuard), kGuardValue);
  float* data = buf.data() + kGuard;
  for (std::int64_t i = 0; i < count; ++i) data[i] = input(r, i);
  std::vector<std::int64_t> before(static_cast<std::size_t>(n), 0);
  for (int p = 0; p < n; ++p) before[static_cast<std::size_t>(p)] = p == r ? 0 : comm.floats_sent_to(p);
  const std::string where = fmt("nodes %s, count %lld", h.text.c_str(), ll(count));
  Run run;
  try {
    microddp::labs::hierarchical_all_reduce(comm, h.nodes, data, count);
  } catch (const std::exception& e) {
    run.failure = where + ": the lab function threw: " + e.what();
    run.threw = true;
    return run;
  }
  for (int p = 0; p < n; ++p) {
    if (p != r && h.nodes.node_of(p) != h.node)
      run.cross += comm.floats_sent_to(p) - before[static_cast<std::size_t>(p)];
  }

  std::int64_t node_sum_factor = 0;  // sum over this node's ranks of (rank + 1)
  for (int p : h.nodes.ranks[static_cast<std::size_t>(h.node)]) node_sum_factor += p + 1;
  for (std::int64_t i = 0; i < count; ++i) {
    const float want = static_cast<float>(n * (n + 1) / 2 * pattern(i));
    if (data[i] == want) continue;
    std::string hint;
    if (data[i] == input(r, i)) {
      hint = h.owner() ? " (this rank's own input: not reduced at all)"
                       : fmt(" (this rank's own input: not reduced at all. Local rank %d owns no shard, the smallest "
                             "node having %d rank(s): it receives the whole result from its node's owners in "
                             "phase 3)",
                             h.local, h.shards);
    } else if (N > 1 && data[i] == static_cast<float>(node_sum_factor * pattern(i))) {
      hint = " (the sum over this node's ranks only: the all-reduce across nodes, phase 2, did not reach it)";
    }
    run.failure =
        fmt("%s, element %lld: expected %.1f (the sum over %d ranks of (rank + 1) * %lld), got %.1f%s", where.c_str(),
            ll(i), static_cast<double>(want), n, ll(pattern(i)), static_cast<double>(data[i]), hint.c_str());
    return run;
  }
  for (std::int64_t g = 0; g < kGuard; ++g) {
    if (buf[static_cast<std::size_t>(g)] != kGuardValue ||
        buf[static_cast<std::size_t>(kGuard + count + g)] != kGuardValue) {
      run.failure = fmt("%s: wrote outside the buffer (%s it)", where.c_str(),
                        buf[static_cast<std::size_t>(g)] != kGuardValue ? "before" : "after");
      return run;
    }
  }
  return run;
}

// The traffic between nodes of one count (node_cross: every node's floats sent to other nodes).
// A ring of N owners over a shard of at most m floats sends at most 2(N-1) chunks of ceil(m/N)
// per owner; a node has S owners. Checked from kTrafficMinCount on.
std::string judge_traffic(const Layout& h, int rank, int n, std::int64_t count, std::int64_t cross,
                          const long long* node_cross) {
  const int N = h.nodes.count();
  if (count < kTrafficMinCount) return "";
  const std::string where = fmt("nodes %s, count %lld", h.text.c_str(), ll(count));
  const std::int64_t m = ceil_div(count, h.shards);
  const std::int64_t per_owner = N > 1 ? 2 * (N - 1) * ceil_div(m, N) : 0, per_node = h.shards * per_owner;
  bool any_node_over = false;
  for (int i = 0; i < N; ++i) any_node_over = any_node_over || node_cross[i] > per_node;
  if (any_node_over) {  // said once per node, by its local rank 0
    const long long sent = node_cross[h.node];
    if (h.local != 0 || sent <= per_node) return "";
    return fmt(
        "%s: node %d sent %lld floats to other nodes; the hierarchical all-reduce sends at most %lld "
        "(%d shard(s) of at most %lld floats, each all-reduced across %d nodes by a ring: 2(N-1)/N of the "
        "buffer per node, whatever its size). Your all-reduce ignores the node layout: a flat algorithm "
        "over all %d ranks sends 2(n-1)/n of the buffer across, and a ring laid over the ranks crosses "
        "between nodes wherever two neighbours sit on different nodes",
        where.c_str(), h.node, sent, ll(per_node), h.shards, ll(m), N, n);
  }
  if (!h.owner() && cross > 0) {
    return fmt(
        "%s: rank %d (node %d, local rank %d) sent %lld floats to other nodes; local ranks >= %d (the "
        "smallest node's rank count) own no shard and send nothing between nodes: their part travels in "
        "their node's owners' shards",
        where.c_str(), rank, h.node, h.local, ll(cross), h.shards);
  }
  if (h.owner() && cross > per_owner) {
    return fmt(
        "%s: rank %d (node %d, local rank %d) sent %lld floats to other nodes; as the owner of shard %d "
        "(at most %lld floats) it sends at most %lld (a ring across %d nodes: 2(N-1) chunks of "
        "ceil(%lld/N)). Is one leader per node carrying the whole buffer between nodes? Here every local "
        "rank j < %d carries shard j: the node's traffic is split over %d ranks",
        where.c_str(), rank, h.node, h.local, ll(cross), h.local, ll(m), ll(per_owner), N, ll(m), h.shards, h.shards);
  }
  return "";
}

// Every count on one layout, then one exchange of the traffic: this rank's first failure in count
// order, or "". Collective (one MPI_Allreduce), whatever happened on this rank.
std::string grade_layout(LabComm& comm, const Layout& h, const std::vector<std::int64_t>& counts) {
  const int N = h.nodes.count();
  std::vector<Run> runs;
  for (const std::int64_t count : counts) {
    runs.push_back(run_one(comm, h, count));
    if (runs.back().threw) break;  // its peers threw too (the starter) or wait for it: stop here
  }
  std::vector<long long> mine(counts.size() * static_cast<std::size_t>(N), 0), all(mine.size(), 0);
  for (std::size_t k = 0; k < runs.size(); ++k)
    mine[k * static_cast<std::size_t>(N) + static_cast<std::size_t>(h.node)] = runs[k].cross;
  MPI_Allreduce(mine.data(), all.data(), static_cast<int>(all.size()), MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (!runs[k].failure.empty()) return runs[k].failure;
    const std::string traffic = judge_traffic(h, comm.rank(), comm.size(), counts[k], runs[k].cross,
                                              all.data() + k * static_cast<std::size_t>(N));
    if (!traffic.empty()) return traffic;
  }
  return "";
}

// Fractional inputs (sums not exact in fp32): every rank must hold the same bits as rank 0, and be
// close to the float64 sum. The algorithm reduces each element in one place and then only copies it.
std::string grade_same_bits(LabComm& comm, const Layout& h, std::int64_t count) {
  const int n = comm.size(), r = comm.rank();
  std::vector<float> data(static_cast<std::size_t>(count));
  auto value = [](int rank, std::int64_t i) {
    return 0.1f * static_cast<float>(rank + 1) + 1e-3f * static_cast<float>(i % 97);
  };
  for (std::int64_t i = 0; i < count; ++i) data[static_cast<std::size_t>(i)] = value(r, i);
  const std::string where = fmt("nodes %s, count %lld, fractional inputs", h.text.c_str(), ll(count));
  std::string threw;
  try {
    microddp::labs::hierarchical_all_reduce(comm, h.nodes, data.data(), count);
  } catch (const std::exception& e) {
    threw = where + ": the lab function threw: " + e.what();
  }
  std::vector<float> root = data;
  MPI_Bcast(root.data(), static_cast<int>(count), MPI_FLOAT, 0, MPI_COMM_WORLD);
  if (!threw.empty()) return threw;
  for (std::int64_t i = 0; i < count; ++i) {
    double want = 0;
    for (int p = 0; p < n; ++p) want += static_cast<double>(value(p, i));
    const float got = data[static_cast<std::size_t>(i)];
    // fp32 sums of n <= a few small terms: within n ulps of the exact sum; 1e-5 relative is far above.
    if (!(std::fabs(static_cast<double>(got) - want) <= 1e-5 * std::fabs(want))) {
      return fmt("%s, element %lld: expected about %.7f (the float64 sum), got %.7f", where.c_str(), ll(i), want,
                 static_cast<double>(got));
    }
    if (std::memcmp(&got, &root[static_cast<std::size_t>(i)], sizeof got) != 0) {
      return fmt(
          "%s, element %lld: rank 0 holds %.9g, this rank %.9g (%lld ulp apart). Every rank must end with "
          "the same bits, or the replicas drift apart: reduce each element in ONE place (the shard's owner, "
          "the ring's chunk owner) and only copy the result from there",
          where.c_str(), ll(i), static_cast<double>(root[static_cast<std::size_t>(i)]), static_cast<double>(got),
          ll(grading::ulps(got, root[static_cast<std::size_t>(i)])));
    }
  }
  return "";
}

// Through the seam: `--comm lab-hier` with nodes of `sizes` (MICRODDP_HIER_NODE_SIZES) runs the
// lab's function on fp32 sums, in and out of place, and the result is exact.
std::string grade_seam(const microddp::comm::MpiRuntime& runtime, const std::vector<int>& sizes) {
  const int n = runtime.size(), r = runtime.rank();
  constexpr std::int64_t kCount = 1001;
  std::string where = "through the seam (--comm lab-hier, MICRODDP_HIER_NODE_SIZES=";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) where += ",";
    where += std::to_string(sizes[i]);
  }
  where += ")";
  try {
    microddp::comm::CommConfig config;
    config.hier_node_sizes = sizes;
    auto comm = microddp::comm::make_communicator("lab-hier", runtime, config);
    std::vector<float> a(kCount), b(kCount, kGuardValue);
    for (std::int64_t i = 0; i < kCount; ++i) a[static_cast<std::size_t>(i)] = input(r, i);
    std::vector<float> in = a;  // the out-of-place call's send buffer
    comm->all_reduce(microddp::core::TensorView::of(a.data(), kCount), microddp::comm::ReduceOp::Sum);
    comm->all_reduce(microddp::core::TensorView::of(in.data(), kCount),
                     microddp::core::TensorView::of(b.data(), kCount), microddp::comm::ReduceOp::Sum);
    for (std::int64_t i = 0; i < kCount; ++i) {
      const float want = static_cast<float>(n * (n + 1) / 2 * pattern(i));
      if (a[static_cast<std::size_t>(i)] != want || b[static_cast<std::size_t>(i)] != want) {
        return fmt("%s, element %lld: expected %.1f, got %.1f in place and %.1f out of place", where.c_str(), ll(i),
                   static_cast<double>(want), static_cast<double>(a[static_cast<std::size_t>(i)]),
                   static_cast<double>(b[static_cast<std::size_t>(i)]));
      }
    }
  } catch (const std::exception& e) {
    return where + ": " + e.what();
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  return grading::run_grader(argc, argv, [](const microddp::comm::MpiRuntime& runtime) {
    microddp::labs::register_labs();
    LabComm comm(MPI_COMM_WORLD);
    const int n = comm.size();
    grading::say_grading(kLab, n, " (a hang here: some send has no matching receive)");
    int cases = 0;
    for (const std::vector<int>& sizes : layouts(n)) {
      // The nodes as `--comm lab-hier` computes them (production code) and hands them to the lab.
      const microddp::comm::HierTopology topology(MPI_COMM_WORLD, sizes, kLargestMessageBytes);
      const LabNodes nodes = microddp::labs::lab_nodes(topology);
      if (grading::any_failed(check_nodes(nodes, sizes, n), true)) return false;
      const Layout h = describe(nodes, comm.rank());
      std::vector<std::int64_t> counts = {0, 1, 2, 3, n - 1, n, n + 1, 2 * n + 1, 7, 64, 1000, 4099};
      std::sort(counts.begin(), counts.end());
      counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
      // One verdict per layout (the counts, then the same-bits check): every rank runs both.
      const std::string values = grading::guarded([&] { return grade_layout(comm, h, counts); });
      const std::string bits = grading::guarded([&] { return grade_same_bits(comm, h, 1000); });
      if (grading::any_failed(values.empty() ? bits : values)) return false;
      cases += static_cast<int>(counts.size()) + 1;
    }
    if (grading::any_failed(grade_seam(runtime, {2}))) return false;
    ++cases;
    grading::root_says(
        "PASS: lab %s, %d cases on %zu node layout(s), every element exact on every rank, traffic "
        "between nodes within the hierarchical algorithm's\n",
        kLab, cases, layouts(n).size());
    return true;
  });
}
