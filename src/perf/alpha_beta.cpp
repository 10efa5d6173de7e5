// alpha_beta.cpp — cost coefficients per algorithm and the weighted least-squares fits.
#include "perf/alpha_beta.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string>

#include "comm/collective_costs.hpp"
#include "comm/factory.hpp"
#include "core/error.hpp"

namespace microddp::perf {

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Ring:
      return "ring";
    case Algorithm::RecursiveDoubling:
      return "rd";
    case Algorithm::Naive:
      return "naive";
    case Algorithm::Rabenseifner:
      return "rabenseifner";
    case Algorithm::DoubleBinaryTree:
      return "dbtree";
    case Algorithm::Auto:
      return "auto";
  }
  return "?";
}

Algorithm parse_algorithm(std::string_view name) {
  if (name == "ring") return Algorithm::Ring;
  if (name == "rd" || name == "recursive_doubling" || name == "recursive-doubling") return Algorithm::RecursiveDoubling;
  if (name == "naive") return Algorithm::Naive;
  if (name == "rabenseifner") return Algorithm::Rabenseifner;
  if (name == "dbtree" || name == "double_binary_tree" || name == "double-binary-tree") return Algorithm::DoubleBinaryTree;
  if (name == "auto") return Algorithm::Auto;
  MDDP_USAGE_CHECK(false, "unknown algorithm '" << name << "' (ring | rd | naive | rabenseifner | dbtree | auto)");
  return Algorithm::Ring;
}

namespace {

Algorithm modelled(comm::AllReduceAlgorithm a) {
  switch (a) {
    case comm::AllReduceAlgorithm::RecursiveDoubling:
      return Algorithm::RecursiveDoubling;
    case comm::AllReduceAlgorithm::Naive:
      return Algorithm::Naive;
    case comm::AllReduceAlgorithm::Rabenseifner:
      return Algorithm::Rabenseifner;
    case comm::AllReduceAlgorithm::DoubleBinaryTree:
      return Algorithm::DoubleBinaryTree;
    case comm::AllReduceAlgorithm::Ring:
    // hier's cost depends on the nodes (link_classes.hpp); as one class it is fitted as a ring.
    case comm::AllReduceAlgorithm::Hierarchical:
    case comm::AllReduceAlgorithm::Library:  // ring-based for the sizes that matter (see the header)
    case comm::AllReduceAlgorithm::Local:    // one rank: every algorithm costs nothing
      break;
  }
  return Algorithm::Ring;
}

}  // namespace

Algorithm algorithm_for_backend(std::string_view backend) {
  const auto d = comm::find_backend(backend.substr(0, backend.find('+')));
  if (!d) return Algorithm::Ring;
  if (d->small_algorithm != d->large_algorithm) return Algorithm::Auto;  // switches per size: `auto`
  return modelled(d->large_algorithm);
}

Algorithm resolve_algorithm(Algorithm algo, int ranks, double bytes) {
  if (algo != Algorithm::Auto) return algo;
  static const comm::BackendDescription kAuto = comm::describe_backend("auto");
  return modelled(kAuto.all_reduce_algorithm(static_cast<std::int64_t>(bytes), ranks));
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "all_reduce";
    case Collective::ReduceScatter:
      return "reduce_scatter";
    case Collective::AllGather:
      return "all_gather";
    case Collective::Broadcast:
      return "broadcast";
  }
  return "?";
}

bool parse_collective(std::string_view name, Collective& out) {
  std::string n;
  for (char ch : name) {
    if (ch != '_' && ch != '-') n += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (n == "allreduce")
    out = Collective::AllReduce;
  else if (n == "reducescatter")
    out = Collective::ReduceScatter;
  else if (n == "allgather")
    out = Collective::AllGather;
  else if (n == "broadcast" || n == "bcast")
    out = Collective::Broadcast;
  else
    return false;
  return true;
}

namespace {
int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}
}  // namespace

Coefficients cost_coefficients(Collective coll, Algorithm algo, int ranks, double bytes) {
  Coefficients k;
  if (ranks <= 1) return k;  // nothing leaves the rank
  const double n = ranks, S = bytes;
  algo = resolve_algorithm(algo, ranks, bytes);
  switch (coll) {
    case Collective::AllReduce: {
      // The formulas of the hand-rolled all-reduces are comm's (collective_costs.hpp, what `auto`
      // chooses by), pipelined in the default segment.
      comm::AllReduceAlgorithm a = comm::AllReduceAlgorithm::Ring;
      switch (algo) {
        case Algorithm::RecursiveDoubling:
          a = comm::AllReduceAlgorithm::RecursiveDoubling;
          break;
        case Algorithm::Naive:
          a = comm::AllReduceAlgorithm::Naive;
          break;
        case Algorithm::Rabenseifner:
          a = comm::AllReduceAlgorithm::Rabenseifner;
          break;
        case Algorithm::DoubleBinaryTree:
          a = comm::AllReduceAlgorithm::DoubleBinaryTree;
          break;
        case Algorithm::Ring:
        case Algorithm::Auto:  // resolved above
          break;
      }
      const comm::CostCoefficients c =
          comm::all_reduce_cost(a, ranks, S, static_cast<double>(comm::kDefaultRingSegmentBytes));
      k = {c.alpha, c.beta, c.gamma};
      break;
    }
    case Collective::ReduceScatter:
      k = {n - 1, (n - 1) / n * S, (n - 1) / n * S};
      if (algo == Algorithm::Naive) k = {2 * (n - 1), 2 * (n - 1) * S, (n - 1) * S};
      break;
    case Collective::AllGather:
      k = {n - 1, (n - 1) / n * S, 0};
      if (algo == Algorithm::Naive) k = {2 * (n - 1), 2 * (n - 1) / n * S * n, 0};
      break;
    case Collective::Broadcast:
      if (algo == Algorithm::Naive) {
        k = {n - 1, (n - 1) * S, 0};
      } else {  // binomial tree
        const double r = ceil_log2(ranks);
        k = {r, r * S, 0};
      }
      break;
  }
  return k;
}

AlphaBeta AlphaBeta::from_link(double gbps, double latency_us, double gamma_s_per_byte) {
  MDDP_USAGE_CHECK(gbps > 0, "link bandwidth must be > 0 Gbit/s, got " << gbps);
  MDDP_USAGE_CHECK(latency_us >= 0, "latency must be >= 0 µs, got " << latency_us);
  return AlphaBeta{latency_us * 1e-6, 8.0 / (gbps * 1e9), gamma_s_per_byte};
}

namespace {
// R², rms and max relative residual of what `r` predicts (its regimes, if any) on the samples.
void set_quality(FitResult& r, Collective coll, Algorithm algo, const std::vector<Sample>& samples) {
  int used = 0;
  double mean = 0;
  for (const Sample& s : samples) {
    if (!(s.seconds > 0) || s.ranks < 2) continue;
    mean += s.seconds;
    ++used;
  }
  r.samples = used;
  if (used == 0) return;
  mean /= used;
  double ss_res = 0, ss_tot = 0, rel2 = 0;
  r.max_rel_residual = 0;
  for (const Sample& s : samples) {
    if (!(s.seconds > 0) || s.ranks < 2) continue;
    const double pred = r.model_for(s.bytes).time_s(cost_coefficients(coll, algo, s.ranks, s.bytes));
    ss_res += (pred - s.seconds) * (pred - s.seconds);
    ss_tot += (s.seconds - mean) * (s.seconds - mean);
    const double rel = (pred - s.seconds) / s.seconds;
    rel2 += rel * rel;
    r.max_rel_residual = std::max(r.max_rel_residual, std::abs(rel));
  }
  r.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  r.rms_rel_residual = std::sqrt(rel2 / used);
}
}  // namespace

FitResult fit_alpha_beta(Collective coll, Algorithm algo, const std::vector<Sample>& samples, double gamma_s_per_byte,
                         bool allow_burst_credit) {
  // Weighted normal equations for y ≈ a·α + b·β, y = T - c·γ, weights w = 1/T².
  double saa = 0, sab = 0, sbb = 0, say = 0, sby = 0;
  int used = 0;
  std::set<std::pair<int, double>> distinct;
  for (const Sample& s : samples) {
    if (!(s.seconds > 0) || s.ranks < 2) continue;
    const Coefficients k = cost_coefficients(coll, algo, s.ranks, s.bytes);
    const double y = s.seconds - k.c * gamma_s_per_byte;
    const double w = 1.0 / (s.seconds * s.seconds);
    saa += w * k.a * k.a;
    sab += w * k.a * k.b;
    sbb += w * k.b * k.b;
    say += w * k.a * y;
    sby += w * k.b * y;
    ++used;
    distinct.insert({s.ranks, s.bytes});
  }
  MDDP_CHECK(used >= 2 && distinct.size() >= 2,
             "alpha-beta fit of " << collective_name(coll) << "/" << algorithm_name(algo)
                                  << " needs >= 2 distinct (ranks, size) points with ranks >= 2, got " << used);
  double alpha = 0, beta = 0;
  const double det = saa * sbb - sab * sab;
  if (det > 1e-12 * saa * sbb) {
    alpha = (say * sbb - sby * sab) / det;
    beta = (sby * saa - say * sab) / det;
  }
  // A negative intercept is a burst credit where allowed: refit T = B·β - credit (design (b, -1),
  // same weights), kept if β > 0, credit > 0 and every fitted size gets a positive time.
  double credit = 0;
  bool credit_ok = false;
  if (allow_burst_credit && det > 1e-12 * saa * sbb && alpha < 0) {
    double s11 = 0, s12 = 0, s22 = 0, s1y = 0, s2y = 0;
    for (const Sample& s : samples) {
      if (!(s.seconds > 0) || s.ranks < 2) continue;
      const Coefficients k = cost_coefficients(coll, algo, s.ranks, s.bytes);
      const double y = s.seconds - k.c * gamma_s_per_byte, w = 1.0 / (s.seconds * s.seconds);
      s11 += w * k.b * k.b;
      s12 -= w * k.b;
      s22 += w;
      s1y += w * k.b * y;
      s2y -= w * y;
    }
    const double d = s11 * s22 - s12 * s12;
    if (d > 1e-12 * s11 * s22) {
      const double b = (s1y * s22 - s2y * s12) / d, c = (s2y * s11 - s1y * s12) / d;
      credit_ok = b > 0 && c > 0;
      for (const Sample& s : samples) {
        if (!credit_ok) break;
        if (!(s.seconds > 0) || s.ranks < 2) continue;
        credit_ok = cost_coefficients(coll, algo, s.ranks, s.bytes).b * b - c > 0;
      }
      if (credit_ok) {
        alpha = 0;
        beta = b;
        credit = c;
      }
    }
  }
  if (!credit_ok && (!(det > 1e-12 * saa * sbb) || alpha < 0 || beta < 0)) {
    // Constrained: try each one-parameter model, keep the better (smaller weighted residual).
    const double a_only = saa > 0 ? std::max(0.0, say / saa) : 0.0;
    const double b_only = sbb > 0 ? std::max(0.0, sby / sbb) : 0.0;
    double ra = 0, rb = 0;
    for (const Sample& s : samples) {
      if (!(s.seconds > 0) || s.ranks < 2) continue;
      const Coefficients k = cost_coefficients(coll, algo, s.ranks, s.bytes);
      const double y = s.seconds - k.c * gamma_s_per_byte;
      ra += std::pow((y - k.a * a_only) / s.seconds, 2);
      rb += std::pow((y - k.b * b_only) / s.seconds, 2);
    }
    if (alpha < 0 && beta >= 0) {
      alpha = 0;
      beta = b_only;
    } else if (beta < 0 && alpha >= 0) {
      beta = 0;
      alpha = a_only;
    } else if (ra <= rb) {
      alpha = a_only;
      beta = 0;
    } else {
      alpha = 0;
      beta = b_only;
    }
  }
  FitResult r;
  r.model = AlphaBeta{alpha, beta, gamma_s_per_byte, credit};
  set_quality(r, coll, algo, samples);
  r.line_rms_rel_residual = r.rms_rel_residual;
  return r;
}

bool FitResult::has_burst_credit() const {
  for (const SizeRegime& g : regimes)
    if (g.has_burst_credit()) return true;
  return false;
}

const AlphaBeta& FitResult::model_for(double bytes) const {
  const AlphaBeta* m = &model;
  for (const SizeRegime& g : regimes) {
    if (g.from_bytes > bytes) break;
    m = &g.model;
  }
  return *m;
}

namespace {
// The size in [lo, hi] where `below`'s line meets `above`'s (bisection: their difference is monotone
// in the size, the coefficients being linear in it); lo or hi if they do not meet in between.
double crossing_bytes(Collective coll, Algorithm algo, int ranks, const AlphaBeta& below, const AlphaBeta& above,
                      double lo, double hi) {
  auto diff = [&](double bytes) {
    const Coefficients k = cost_coefficients(coll, algo, ranks, bytes);
    return above.time_s(k) - below.time_s(k);
  };
  if (diff(lo) >= 0) return lo;
  if (diff(hi) <= 0) return hi;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (diff(mid) < 0 ? lo : hi) = mid;
  }
  return hi;
}
}  // namespace

FitResult fit_alpha_beta_regimes(Collective coll, Algorithm algo, const std::vector<Sample>& samples,
                                 double gamma_s_per_byte, int max_regimes) {
  const FitResult line = fit_alpha_beta(coll, algo, samples, gamma_s_per_byte);
  FitResult best = line;
  std::vector<Sample> usable;
  std::set<double> size_set;
  for (const Sample& s : samples) {
    if (!(s.seconds > 0) || s.ranks < 2) continue;
    usable.push_back(s);
    size_set.insert(s.bytes);
  }
  const std::vector<double> sizes(size_set.begin(), size_set.end());
  const auto n = static_cast<double>(usable.size());
  // Two sizes suffice for a regime: a cliff near the top of a sweep (Open MPI 4.1.4 on a Zen 5
  // machine: all-reduce at ~5 GB/s up to 16 MiB, 0.37 GB/s from 32 MiB, in a sweep ending at 64 MiB)
  // leaves only two sizes above it, and three per regime left it to one line with R2 -0.01. BIC
  // still charges every regime its parameters, so a straight line is not cut.
  constexpr std::size_t kMinSizes = 2;
  // BIC on relative residuals; RSS floored so exact synthetic data does not reward extra regimes.
  auto bic = [&](double rms_rel, int regimes) {
    const double rss = std::max(n * rms_rel * rms_rel, n * 1e-12);
    return n * std::log(rss / n) + (3.0 * regimes - 1.0) * std::log(n);
  };
  double best_bic = bic(best.rms_rel_residual, 1);
  // cuts: indices into `sizes` where a new regime starts (ascending). Tries every placement of
  // 1 .. max_regimes-1 cuts with >= kMinSizes sizes per regime (a sweep has ~10-30 sizes).
  std::vector<std::size_t> cuts;
  auto evaluate = [&]() {
    FitResult f = line;  // the one line stays the reported α, β; the regimes are added to it
    for (std::size_t k = 0; k <= cuts.size(); ++k) {
      const double lo = k == 0 ? 0.0 : sizes[cuts[k - 1]];
      const double hi = k == cuts.size() ? sizes.back() : sizes[cuts[k] - 1];
      std::vector<Sample> part;
      for (const Sample& s : usable)
        if (s.bytes >= lo && s.bytes <= hi) part.push_back(s);
      SizeRegime g;
      g.from_bytes = k == 0 ? 0.0 : std::sqrt(sizes[cuts[k - 1] - 1] * sizes[cuts[k - 1]]);
      g.model = fit_alpha_beta(coll, algo, part, gamma_s_per_byte, /*allow_burst_credit=*/k > 0).model;
      // A burst regime's line falls below zero a little under its sizes, so the geometric middle may
      // not do: the boundary goes where it meets the line below (a token bucket's time is the larger
      // of the two lines), kept between the two regimes' nearest measured sizes.
      if (g.has_burst_credit())
        g.from_bytes = crossing_bytes(coll, algo, part.front().ranks, f.regimes.back().model, g.model,
                                      sizes[cuts[k - 1] - 1], sizes[cuts[k - 1]]);
      f.regimes.push_back(g);
    }
    set_quality(f, coll, algo, usable);
    const double b = bic(f.rms_rel_residual, static_cast<int>(f.regimes.size()));
    if (b < best_bic) {
      best_bic = b;
      best = f;
    }
  };
  const std::size_t m = sizes.size();
  if (max_regimes >= 2) {
    for (std::size_t c1 = kMinSizes; c1 + kMinSizes <= m; ++c1) {
      cuts = {c1};
      evaluate();
      if (max_regimes >= 3) {
        for (std::size_t c2 = c1 + kMinSizes; c2 + kMinSizes <= m; ++c2) {
          cuts = {c1, c2};
          evaluate();
        }
      }
    }
  }
  return best;
}

const ModelEntry* CommModel::find(std::string_view backend, Collective coll) const {
  for (const auto& e : entries)
    if (e.backend == backend && e.collective == coll) return &e;
  return nullptr;
}

double CommModel::time_s(std::string_view backend, Collective coll, int ranks, double bytes) const {
  const ModelEntry* e = find(backend, coll);
  MDDP_USAGE_CHECK(e != nullptr, "the communication model has no " << collective_name(coll) << " entry for backend '"
                                                                   << backend << "' (source: " << source << ")");
  return e->time_s(ranks, bytes);
}

}  // namespace microddp::perf
