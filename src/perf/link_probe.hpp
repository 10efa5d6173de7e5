// link_probe.hpp — which host has the slow network link, from the bandwidth of every ordered pair
// of ranks measured alone (`microddp bench links`, docs/hierarchical.md "Naming the slow host").
//
// Why pairs, not collective timings: every rank of a ring waits for the slowest hop, so a
// collective's time says THAT a link is slow, never WHICH. A transfer from rank i to rank j with
// no other traffic is bounded by i's host's outgoing link and j's host's incoming link:
//   rate(i -> j) ≈ min(out(host i), in(host j)).
// So the FASTEST inter-host pair a host sends in shows its own outgoing rate, as soon as one peer
// receives faster than it sends, and likewise the fastest pair it receives in shows its incoming
// rate. A host's link rate is the slower of the two directions (one bad direction is enough to
// make a host slow). A host is slow when its link rate is below slow_fraction x the median link
// rate of the OTHER hosts (the reference leaves the host itself out, so a slow host cannot pull
// its own reference down).
//
// What pair bandwidths cannot tell, by construction (not a tuning matter):
//   * one host: there are no inter-host pairs;
//   * two hosts: every inter-host pair involves both, so a slow end cannot be told from a slow
//     peer: the verdict says so (CannotTell) and gives the rate between them;
//   * a host whose every peer is slow shows only the peers' rate: with 3 hosts and 2 slow, all
//     three look alike. Naming a slow host needs at least two hosts with fast links between them.
// The per-host median over its pairs is reported too (what a user would compute first), but not
// used for the verdict: it mixes in the peers' links (with 3 hosts, half of a fast host's pairs
// are with the slow one).
#pragma once

#include <string>
#include <vector>

namespace microddp::perf {

// One ordered pair, timed alone: src sends `bytes` to dst (time: src's median per transfer).
struct PairMeasurement {
  int src_rank = 0;
  int dst_rank = 0;
  double bytes = 0;
  double seconds = 0;
  double gb_per_s() const { return bytes / seconds * 1e-9; }
};

struct HostLinkSummary {
  std::string host;
  int ranks = 0;
  int inter_pairs = 0;       // inter-host pairs it takes part in (sending or receiving)
  double send_gbs = 0;       // fastest inter-host pair it sends in (0: none)
  double recv_gbs = 0;       // fastest inter-host pair it receives in (0: none)
  double pairs_median_gbs = 0;  // median over its inter-host pairs (information only, see above)
  double link_gbs = 0;       // min(send_gbs, recv_gbs): its link rate, the slower direction
  double others_median_gbs = 0;  // median of the other hosts' link_gbs (0: fewer than 3 hosts)
  bool slow = false;
};

enum class LinkVerdictKind {
  OneHost,     // no inter-host pair
  CannotTell,  // two hosts: each pair involves both
  NoSlowHost,
  SlowHosts,
};

struct LinkVerdict {
  LinkVerdictKind kind = LinkVerdictKind::OneHost;
  std::vector<HostLinkSummary> hosts;  // in order of first appearance in host_of_rank
  std::vector<std::string> slow_hosts;
  double inter_median_gbs = 0;  // median over all inter-host pairs (0: none)
  std::string text;             // one line: "slow host: ...", "no slow host ...", ...
};

// The default of `bench links --slow-fraction`: a host at under half the others' rate is slow.
// Half, because on a shared machine the same link measures within about ±30% from run to run
// (docs/cluster.md), while the case this names, a link of a lower class, is 10x.
inline constexpr double kDefaultSlowFraction = 0.5;

// host_of_rank[r]: the host (node) name of rank r; every pair's ranks must index it. Pairs between
// ranks of the same host are ignored (shared memory, not the network). slow_fraction in (0, 1).
// Throws core::Error on a pair with a rank outside host_of_rank, or a time or size that is not
// finite and positive.
LinkVerdict classify_links(const std::vector<PairMeasurement>& pairs, const std::vector<std::string>& host_of_rank,
                           double slow_fraction = kDefaultSlowFraction);

}  // namespace microddp::perf
