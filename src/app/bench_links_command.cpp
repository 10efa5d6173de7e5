// bench_links_command.cpp — `microddp bench links`: the bandwidth of every ordered pair of ranks,
// each measured alone, and which host has the slow network link (perf/link_probe.hpp).
//
// Method (also printed in the header):
//   * Each rank learns its host: the node-local group (MPI_Comm_split_type SHARED, the grouping the
//     MPI library uses for shared memory) named by the processor name of its lowest rank.
//   * For every ordered pair (src -> dst) in one fixed order on every rank: a barrier on the world,
//     then src sends --bytes to dst with MPI_Send and dst answers with a 1-byte ack, --warmup +
//     --iters times; the other ranks go straight to the next barrier and wait there, so the pair's
//     transfers are the only traffic. Time: on src, send start -> ack received, per transfer; the
//     pair's time is the median over --iters. GB/s = bytes / time (the ack's one small-message
//     latency is included: about 0.1 ms, under 1% of 4 MiB at 1 Gbit/s).
//   * Cost: n(n-1) ordered pairs x (warmup + iters) transfers of --bytes, one at a time: at the
//     defaults (4 MiB, 1 + 5) a pair over a 1 Gbit/s link takes about 0.2 s, over 100 Mbit/s 2 s;
//     16 ranks make 240 pairs. Pairs inside a host are measured too (shared memory, fast) and shown,
//     but judge no link.
//   * The bench's own exchanges are plain MPI calls on MPI_COMM_WORLD, each pair inside a watched
//     section (docs/reliability.md), so a dead or stopped rank ends the job instead of hanging it.
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli_values.hpp"
#include "app/command.hpp"
#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "perf/link_probe.hpp"
#include "perf/median.hpp"

namespace microddp::app {

namespace {

using perf::median;

constexpr int kDataTag = 7101, kAckTag = 7102;  // any tags: nothing else talks on the world meanwhile

// Every rank's host label: the processor name of the lowest world rank on its node. Two nodes that
// report the same name are told apart by that rank ("name#4"), so they are never merged.
std::vector<std::string> host_of_every_rank(const comm::MpiRuntime& mpi) {
  const auto watched = mpi.watch("bench links: learning every rank's host");
  MPI_Comm node = MPI_COMM_NULL;
  MDDP_MPI_CHECK(MPI_Comm_split_type(mpi.world(), MPI_COMM_TYPE_SHARED, mpi.rank(), MPI_INFO_NULL, &node));
  int leader = mpi.rank();
  MDDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node));
  MDDP_MPI_CHECK(MPI_Comm_free(&node));
  const int n = mpi.size();
  std::vector<int> leaders(static_cast<std::size_t>(n));
  MDDP_MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, mpi.world()));
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  const std::string name = mpi.hostname().substr(0, MPI_MAX_PROCESSOR_NAME - 1);
  std::copy(name.begin(), name.end(), mine.begin());
  std::vector<char> names(static_cast<std::size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  MDDP_MPI_CHECK(MPI_Allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME,
                               MPI_CHAR, mpi.world()));
  auto name_of = [&](int r) { return std::string(names.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME); };
  std::map<std::string, std::vector<int>> leaders_by_name;
  for (int r = 0; r < n; ++r) {
    auto& l = leaders_by_name[name_of(leaders[static_cast<std::size_t>(r)])];
    if (std::find(l.begin(), l.end(), leaders[static_cast<std::size_t>(r)]) == l.end())
      l.push_back(leaders[static_cast<std::size_t>(r)]);
  }
  std::vector<std::string> hosts;
  for (int r = 0; r < n; ++r) {
    const int l = leaders[static_cast<std::size_t>(r)];
    const std::string base = name_of(l);
    hosts.push_back(leaders_by_name[base].size() > 1 ? base + "#" + std::to_string(l) : base);
  }
  return hosts;
}

class BenchLinksCommand final : public Command {
 public:
  explicit BenchLinksCommand(CLI::App* sub) {
    add_byte_size_option(sub, "--bytes", bytes_, "Bytes per transfer (at most 1G: one MPI message)", 1,
                         std::int64_t{1} << 30);
    sub->add_option("--iters", iters_, "Timed transfers per pair (the median is kept)")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    sub->add_option("--warmup", warmup_, "Untimed transfers per pair first")
        ->check(CLI::Range(0, 100000))
        ->capture_default_str();
    sub->add_option("--slow-fraction", slow_fraction_,
                    "A host is slow when its link rate is below this fraction of the other hosts' median (0..1)")
        ->check(finite_range(0, 1))
        ->capture_default_str();
    sub->add_option("--csv", csv_, "Also write every pair to this CSV file (rank 0)");
    sub->add_option("--json", json_, "Also write the pairs, the hosts and the verdict to this JSON file (rank 0)");
  }
  void validate() override {
    MDDP_USAGE_CHECK(slow_fraction_ > 0 && slow_fraction_ < 1,
                     "--slow-fraction " << slow_fraction_ << " must lie strictly between 0 and 1");
  }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  // This rank's median seconds per transfer to every rank (0 for itself and for pairs it does not send in).
  std::vector<double> measure_pairs(const comm::MpiRuntime& mpi);

  std::int64_t bytes_ = std::int64_t{4} << 20;
  int iters_ = 5, warmup_ = 1;
  double slow_fraction_ = perf::kDefaultSlowFraction;
  std::string csv_, json_;
};

std::vector<double> BenchLinksCommand::measure_pairs(const comm::MpiRuntime& mpi) {
  const int n = mpi.size(), me = mpi.rank();
  MDDP_CHECK(bytes_ <= INT_MAX, "--bytes " << bytes_ << " does not fit one MPI message count");
  const int count = static_cast<int>(bytes_);
  std::vector<char> buf(static_cast<std::size_t>(bytes_), static_cast<char>(me));
  char ack = 0;
  std::vector<double> seconds_to(static_cast<std::size_t>(n), 0.0);
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      const auto watched = mpi.watch("bench links: one pair's barrier and transfers");
      MDDP_MPI_CHECK(MPI_Barrier(mpi.world()));  // the previous pair has finished: this one runs alone
      if (me == src) {
        std::vector<double> times;
        for (int it = 0; it < warmup_ + iters_; ++it) {
          core::Stopwatch sw;
          MDDP_MPI_CHECK(MPI_Send(buf.data(), count, MPI_BYTE, dst, kDataTag, mpi.world()));
          MDDP_MPI_CHECK(MPI_Recv(&ack, 1, MPI_BYTE, dst, kAckTag, mpi.world(), MPI_STATUS_IGNORE));
          if (it >= warmup_) times.push_back(sw.elapsed_s());
        }
        seconds_to[static_cast<std::size_t>(dst)] = median(times);
      } else if (me == dst) {
        for (int it = 0; it < warmup_ + iters_; ++it) {
          MDDP_MPI_CHECK(MPI_Recv(buf.data(), count, MPI_BYTE, src, kDataTag, mpi.world(), MPI_STATUS_IGNORE));
          MDDP_MPI_CHECK(MPI_Send(&ack, 1, MPI_BYTE, src, kAckTag, mpi.world()));
        }
      }
    }
  }
  return seconds_to;
}

int BenchLinksCommand::run(const comm::MpiRuntime& mpi) {
  const int n = mpi.size();
  const bool root = mpi.rank() == 0;
  const std::vector<std::string> hosts = host_of_every_rank(mpi);
  const std::int64_t npairs = static_cast<std::int64_t>(n) * (n - 1);
  if (root) {
    std::size_t distinct = 0;
    for (std::size_t r = 0; r < hosts.size(); ++r) {
      distinct += std::find(hosts.begin(), hosts.begin() + static_cast<std::ptrdiff_t>(r), hosts[r]) ==
                  hosts.begin() + static_cast<std::ptrdiff_t>(r);
    }
    std::printf("# microddp bench links: %d rank(s) on %zu host(s), %s\n", n, distinct, mpi.library_version().c_str());
    std::printf("# %" PRId64 " ordered pairs = n(n-1), one at a time (the other ranks wait in a barrier); per pair, src\n",
                npairs);
    std::printf("# sends %" PRId64 " bytes to dst and dst answers with a 1-byte ack, %d warm-up + %d timed transfers;\n",
                bytes_, warmup_, iters_);
    std::printf("# time = median on src of send start -> ack received (us); GB/s = bytes / time.\n");
    std::printf("# %5s %-24s %5s %-24s %9s %12s %9s\n", "src", "src_host", "dst", "dst_host", "same_host", "time(us)",
                "GB/s");
    std::fflush(stdout);
  }
  const std::vector<double> mine = measure_pairs(mpi);
  std::vector<double> all(static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
  {
    const auto watched = mpi.watch("bench links: gathering the pairs' times");
    MDDP_MPI_CHECK(MPI_Gather(mine.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, 0, mpi.world()));
  }
  if (!root) return 0;
  std::vector<perf::PairMeasurement> pairs;
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      const double t = all[static_cast<std::size_t>(s) * static_cast<std::size_t>(n) + static_cast<std::size_t>(d)];
      pairs.push_back({s, d, static_cast<double>(bytes_), t});
      const auto& p = pairs.back();
      std::printf("  %5d %-24s %5d %-24s %9d %12.1f %9.4f\n", s, hosts[static_cast<std::size_t>(s)].c_str(), d,
                  hosts[static_cast<std::size_t>(d)].c_str(),
                  hosts[static_cast<std::size_t>(s)] == hosts[static_cast<std::size_t>(d)] ? 1 : 0, t * 1e6,
                  p.gb_per_s());
    }
  }
  const perf::LinkVerdict v = perf::classify_links(pairs, hosts, slow_fraction_);
  std::printf("#\n# Per host, over the inter-host pairs it takes part in: send / recv = the fastest pair it sends /\n");
  std::printf("# receives in (a pair is bounded by the sender's outgoing and the receiver's incoming link), link =\n");
  std::printf("# the slower of the two, others = the median link of the other hosts; median = of its pairs (info).\n");
  std::printf("# %-24s %5s %6s %9s %9s %9s %9s %9s %11s %4s\n", "host", "ranks", "pairs", "send", "recv", "median",
              "link", "others", "link/others", "slow");
  for (const auto& h : v.hosts) {
    char ratio[32] = "-";
    if (h.others_median_gbs > 0) std::snprintf(ratio, sizeof ratio, "%.3f", h.link_gbs / h.others_median_gbs);
    std::printf("  %-24s %5d %6d %9.4f %9.4f %9.4f %9.4f %9.4f %11s %4s\n", h.host.c_str(), h.ranks, h.inter_pairs,
                h.send_gbs, h.recv_gbs, h.pairs_median_gbs, h.link_gbs, h.others_median_gbs, ratio,
                h.slow ? "yes" : "no");
  }
  std::printf("# (GB/s; a host is slow when link/others < %g, --slow-fraction)\n", slow_fraction_);
  std::printf("# verdict: %s\n", v.text.c_str());
  std::fflush(stdout);
  if (!csv_.empty()) {
    std::ofstream f(csv_);
    MDDP_CHECK(f.good(), "cannot write " << csv_);
    f << "src_rank,src_host,dst_rank,dst_host,same_host,bytes,time_us,gb_per_s\n";
    for (const auto& p : pairs) {
      const auto& sh = hosts[static_cast<std::size_t>(p.src_rank)];
      const auto& dh = hosts[static_cast<std::size_t>(p.dst_rank)];
      f << p.src_rank << ',' << sh << ',' << p.dst_rank << ',' << dh << ',' << (sh == dh ? 1 : 0) << ',' << bytes_
        << ',' << p.seconds * 1e6 << ',' << p.gb_per_s() << '\n';
    }
  }
  if (!json_.empty()) {
    std::ofstream f(json_);
    MDDP_CHECK(f.good(), "cannot write " << json_);
    nlohmann::json rows = nlohmann::json::array(), hs = nlohmann::json::array();
    for (const auto& p : pairs) {
      const auto& sh = hosts[static_cast<std::size_t>(p.src_rank)];
      const auto& dh = hosts[static_cast<std::size_t>(p.dst_rank)];
      rows.push_back({{"src_rank", p.src_rank}, {"src_host", sh}, {"dst_rank", p.dst_rank}, {"dst_host", dh},
                      {"same_host", sh == dh}, {"bytes", bytes_}, {"time_us", p.seconds * 1e6},
                      {"gb_per_s", p.gb_per_s()}});
    }
    for (const auto& h : v.hosts) {
      hs.push_back({{"host", h.host}, {"ranks", h.ranks}, {"inter_pairs", h.inter_pairs}, {"send_gbs", h.send_gbs},
                    {"recv_gbs", h.recv_gbs}, {"pairs_median_gbs", h.pairs_median_gbs}, {"link_gbs", h.link_gbs},
                    {"others_median_gbs", h.others_median_gbs}, {"slow", h.slow}});
    }
    const nlohmann::json j = {{"ranks", n},
                              {"bytes", bytes_},
                              {"iters", iters_},
                              {"warmup", warmup_},
                              {"time", "median on src of send start -> ack received"},
                              {"slow_fraction", slow_fraction_},
                              {"pairs", rows},
                              {"hosts", hs},
                              {"slow_hosts", v.slow_hosts},
                              {"verdict", v.text}};
    f << j.dump(2) << '\n';
  }
  return 0;
}

}  // namespace

std::unique_ptr<Command> register_bench_links(CLI::App& bench, CLI::App*& sub) {
  sub = bench.add_subcommand("links", "Bandwidth of every ordered pair of ranks, one at a time; names the slow host");
  return std::make_unique<BenchLinksCommand>(sub);
}

}  // namespace microddp::app
