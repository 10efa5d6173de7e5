// link_probe.cpp — per-host link rates from pair bandwidths and the slow-host verdict (see the header).
#include "perf/link_probe.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/error.hpp"
#include "perf/median.hpp"

namespace microddp::perf {

namespace {

// Bandwidths to 3 significant digits (0.0113, 0.110, 1.05): links span orders of magnitude.
std::string gbs(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g GB/s", x);
  return b;
}

std::string ratio(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1fx", x);
  return b;
}

}  // namespace

LinkVerdict classify_links(const std::vector<PairMeasurement>& pairs, const std::vector<std::string>& host_of_rank,
                           double slow_fraction) {
  MDDP_CHECK(slow_fraction > 0 && slow_fraction < 1, "slow_fraction " << slow_fraction << " is not in (0, 1)");
  LinkVerdict v;
  std::map<std::string, std::size_t> index;  // host name -> position in v.hosts
  for (const std::string& h : host_of_rank) {
    auto [it, fresh] = index.try_emplace(h, v.hosts.size());
    if (fresh) v.hosts.push_back({.host = h});
    ++v.hosts[it->second].ranks;
  }
  const int nranks = static_cast<int>(host_of_rank.size());
  std::vector<std::vector<double>> involved(v.hosts.size());
  std::vector<double> inter;
  for (const PairMeasurement& p : pairs) {
    MDDP_CHECK(p.src_rank >= 0 && p.src_rank < nranks && p.dst_rank >= 0 && p.dst_rank < nranks,
               "pair " << p.src_rank << " -> " << p.dst_rank << " names a rank outside 0.." << nranks - 1);
    MDDP_CHECK(std::isfinite(p.seconds) && p.seconds > 0 && std::isfinite(p.bytes) && p.bytes > 0,
               "pair " << p.src_rank << " -> " << p.dst_rank << ": " << p.bytes << " bytes in " << p.seconds
                       << " s is not a measurement");
    const std::size_t s = index.at(host_of_rank[static_cast<std::size_t>(p.src_rank)]);
    const std::size_t d = index.at(host_of_rank[static_cast<std::size_t>(p.dst_rank)]);
    if (s == d) continue;  // shared memory: says nothing about the network
    const double rate = p.gb_per_s();
    inter.push_back(rate);
    involved[s].push_back(rate);
    involved[d].push_back(rate);
    v.hosts[s].send_gbs = std::max(v.hosts[s].send_gbs, rate);
    v.hosts[d].recv_gbs = std::max(v.hosts[d].recv_gbs, rate);
  }
  v.inter_median_gbs = median(inter);
  for (std::size_t h = 0; h < v.hosts.size(); ++h) {
    HostLinkSummary& s = v.hosts[h];
    s.inter_pairs = static_cast<int>(involved[h].size());
    s.pairs_median_gbs = median(involved[h]);
    // A direction with no pair (only in partial input) does not bound the link.
    if (s.send_gbs > 0 && s.recv_gbs > 0) {
      s.link_gbs = std::min(s.send_gbs, s.recv_gbs);
    } else {
      s.link_gbs = std::max(s.send_gbs, s.recv_gbs);
    }
  }
  std::vector<std::size_t> measured;  // hosts with at least one inter-host pair
  for (std::size_t h = 0; h < v.hosts.size(); ++h) {
    if (v.hosts[h].link_gbs > 0) measured.push_back(h);
  }
  if (measured.empty()) {
    v.kind = LinkVerdictKind::OneHost;
    v.text = v.hosts.size() == 1 ? "one host (" + v.hosts[0].host + "): no inter-host pairs, no link to judge"
                                 : "no inter-host pairs measured: no link to judge";
    return v;
  }
  if (measured.size() == 2) {
    const HostLinkSummary& a = v.hosts[measured[0]];
    const HostLinkSummary& b = v.hosts[measured[1]];
    v.kind = LinkVerdictKind::CannotTell;
    v.text = "cannot tell which of the 2 hosts is slow: every inter-host pair involves both (" + a.host + " -> " +
             b.host + " " + gbs(a.send_gbs) + ", " + b.host + " -> " + a.host + " " + gbs(b.send_gbs) +
             "); a third host is needed to name one";
    return v;
  }
  std::string slow_text;
  double worst = 0;  // the lowest link / others' median, for the "no slow host" line
  std::size_t worst_host = measured[0];
  for (std::size_t h : measured) {
    std::vector<double> others;
    for (std::size_t o : measured) {
      if (o != h) others.push_back(v.hosts[o].link_gbs);
    }
    HostLinkSummary& s = v.hosts[h];
    s.others_median_gbs = median(others);
    const double r = s.link_gbs / s.others_median_gbs;
    if (worst == 0 || r < worst) worst = r, worst_host = h;
    s.slow = r < slow_fraction;
    if (!s.slow) continue;
    v.slow_hosts.push_back(s.host);
    slow_text += std::string(slow_text.empty() ? "" : "; ") + "slow host: " + s.host + " (its link " +
                 gbs(s.link_gbs) + ", the other hosts' median " + gbs(s.others_median_gbs) + ": " + ratio(1 / r) +
                 " slower)";
  }
  if (!v.slow_hosts.empty()) {
    v.kind = LinkVerdictKind::SlowHosts;
    v.text = slow_text;
  } else {
    v.kind = LinkVerdictKind::NoSlowHost;
    char frac[32];
    std::snprintf(frac, sizeof frac, "%g", slow_fraction);
    v.text = "no slow host (every host's link at least " + std::string(frac) +
             " x the other hosts' median; the lowest: " + v.hosts[worst_host].host + " at " + ratio(worst) + ")";
  }
  return v;
}

}  // namespace microddp::perf
