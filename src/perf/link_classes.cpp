// link_classes.cpp — per-link-class fits and the hier-vs-ring prediction (see link_classes.hpp).
#include "perf/link_classes.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "perf/comm_model_io.hpp"

namespace microddp::perf {

namespace {

// The ring's all-reduce rows of one file (or, without ring rows, the first backend's).
std::vector<Sample> ring_samples(const std::vector<BenchRow>& rows, const std::string& source, std::string& backend,
                                 int& max_ranks) {
  std::set<std::string> backends;
  for (const BenchRow& r : rows) {
    Collective c;
    if (parse_collective(r.collective, c) && c == Collective::AllReduce && r.ranks >= 2) backends.insert(r.backend);
  }
  MDDP_USAGE_CHECK(!backends.empty(), "'" << source << "' has no all_reduce rows at 2 or more ranks");
  backend = backends.count("ring") != 0 ? "ring" : *backends.begin();
  std::vector<Sample> s;
  for (const BenchRow& r : rows) {
    Collective c;
    if (r.backend == backend && parse_collective(r.collective, c) && c == Collective::AllReduce && r.ranks >= 2) {
      s.push_back({r.ranks, r.bytes, r.seconds});
      max_ranks = std::max(max_ranks, r.ranks);
    }
  }
  return s;
}

nlohmann::json fit_json(const FitResult& f, const std::string& source) {
  return {{"source", source},
          {"alpha_us", f.model.alpha_s * 1e6},
          {"beta_ns_per_byte", f.model.beta_s_per_byte * 1e9},
          {"r2", f.r2},
          {"max_rel_residual", f.max_rel_residual},
          {"rms_rel_residual", f.rms_rel_residual},
          {"samples", f.samples},
          {"regimes", regimes_json(f.regimes)},
          {"poor", !fit_warning(f).empty()},
          {"warning", fit_warning(f)}};
}

}  // namespace

LinkClassModel fit_link_classes(const std::vector<BenchRow>& intra_rows, const std::string& intra_source,
                                const std::vector<BenchRow>& inter_rows, const std::string& inter_source) {
  LinkClassModel m;
  std::string b;
  m.intra_ranks = m.inter_ranks = 2;
  m.intra = fit_alpha_beta_regimes(Collective::AllReduce, Algorithm::Ring,
                                   ring_samples(intra_rows, intra_source, b, m.intra_ranks));
  m.intra_source = intra_source + " (" + b + ")";
  m.inter = fit_alpha_beta_regimes(Collective::AllReduce, Algorithm::Ring,
                                   ring_samples(inter_rows, inter_source, b, m.inter_ranks));
  m.inter_source = inter_source + " (" + b + ")";
  return m;
}

double flat_ring_all_reduce_s(const LinkClassModel& m, int nodes, int ranks_per_node, double bytes) {
  const int n = nodes * ranks_per_node;
  if (n <= 1 || bytes <= 0) return 0;
  const FitResult& f = nodes > 1 ? m.inter : m.intra;
  const AlphaBeta& ab = f.model_for(bytes / n * (nodes > 1 ? m.inter_ranks : m.intra_ranks));  // regime of S/n messages
  // A burst credit is per collective (alpha_beta.hpp SizeRegime), not per message.
  return 2.0 * (n - 1) * ab.alpha_s + std::max(0.0, 2.0 * (n - 1) * bytes / n * ab.beta_s_per_byte - ab.credit_s);
}

double hier_all_reduce_s(const LinkClassModel& m, int nodes, int ranks_per_node, double bytes) {
  const double L = ranks_per_node, N = nodes;
  if (nodes * ranks_per_node <= 1 || bytes <= 0) return 0;
  double t = 0;
  if (ranks_per_node > 1) {
    const AlphaBeta& a = m.intra.model_for(bytes / L * m.intra_ranks);
    t += 2.0 * (L - 1) * a.alpha_s + std::max(0.0, 2.0 * (L - 1) / L * bytes * a.beta_s_per_byte - a.credit_s);
  }
  if (nodes > 1) {
    const AlphaBeta& e = m.inter.model_for(bytes / L / N * m.inter_ranks);
    t += 2.0 * (N - 1) * e.alpha_s + std::max(0.0, 2.0 * (N - 1) / N * bytes * e.beta_s_per_byte - e.credit_s);
  }
  return t;
}

std::string fit_warning(const FitResult& f) {
  if (f.r2 >= kPoorFitR2 && f.max_rel_residual <= kPoorFitMaxRelResidual) return "";
  std::ostringstream os;
  os.precision(3);
  os << "poor fit: R2 " << f.r2 << ", max residual " << 100.0 * f.max_rel_residual << "% (flagged below R2 "
     << kPoorFitR2 << " or above " << 100.0 * kPoorFitMaxRelResidual << "%)";
  return os.str();
}

nlohmann::json compare_hier_ring(const LinkClassModel& m, int nodes, int ranks_per_node, double max_bytes,
                                 const std::vector<BenchRow>& measured) {
  MDDP_USAGE_CHECK(nodes >= 1 && ranks_per_node >= 1, "--nodes and --ranks-per-node must be >= 1");
  const int n = nodes * ranks_per_node;
  // Measured all-reduce times at this rank count: (backend, bytes) -> seconds (the fastest row).
  std::map<std::pair<std::string, double>, double> meas;
  std::set<double> sizes;
  for (const BenchRow& r : measured) {
    Collective c;
    if (!parse_collective(r.collective, c) || c != Collective::AllReduce || r.ranks != n) continue;
    if (r.backend != "ring" && r.backend != "hier") continue;
    auto [it, fresh] = meas.try_emplace({r.backend, r.bytes}, r.seconds);
    if (!fresh) it->second = std::min(it->second, r.seconds);
    sizes.insert(r.bytes);
  }
  if (sizes.empty()) {
    for (double b = 4096; b <= max_bytes; b *= 4) sizes.insert(b);
  }
  const std::string intra_warn = fit_warning(m.intra), inter_warn = fit_warning(m.inter);
  nlohmann::json rows = nlohmann::json::array();
  double crossover = -1;
  for (double bytes : sizes) {
    const double ring = flat_ring_all_reduce_s(m, nodes, ranks_per_node, bytes);
    const double hier = hier_all_reduce_s(m, nodes, ranks_per_node, bytes);
    // Which fits each prediction used: the ring only inter (N > 1) or intra; hier both.
    std::string warn;
    if (nodes > 1 && !inter_warn.empty()) warn += "inter " + inter_warn;
    if ((nodes == 1 || ranks_per_node > 1) && !intra_warn.empty())
      warn += (warn.empty() ? "" : "; ") + ("intra " + intra_warn);
    nlohmann::json row = {{"bytes", bytes},
                          {"ring_predicted_ms", ring * 1e3},
                          {"hier_predicted_ms", hier * 1e3},
                          {"use", hier < ring ? "hier" : "ring"},
                          {"model_warning", warn}};
    for (const char* b : {"ring", "hier"}) {
      auto it = meas.find({b, bytes});
      if (it == meas.end()) continue;
      const double pred = std::string(b) == "ring" ? ring : hier;
      row[std::string(b) + "_measured_ms"] = it->second * 1e3;
      row[std::string(b) + "_error_pct"] = 100.0 * (pred - it->second) / it->second;
    }
    if (hier < ring && crossover < 0) crossover = bytes;
    if (hier >= ring) crossover = -1;  // hier must stay ahead from the crossover on
    rows.push_back(row);
  }
  return {{"nodes", nodes},
          {"ranks_per_node", ranks_per_node},
          {"intra", fit_json(m.intra, m.intra_source)},
          {"inter", fit_json(m.inter, m.inter_source)},
          {"hier_from_bytes", crossover},
          {"rows", rows}};
}

std::string format_hier_comparison(const nlohmann::json& j) {
  std::ostringstream o;
  char buf[512];
  o << "# hier vs flat ring, " << j.at("nodes").get<int>() << " node(s) x " << j.at("ranks_per_node").get<int>()
    << " rank(s): alpha-beta per link class\n";
  for (const char* cls : {"intra", "inter"}) {
    const auto& f = j.at(cls);
    std::snprintf(
        buf, sizeof buf,
        "#   %-5s alpha %8.2f us  beta %8.4f ns/B (%6.3f GB/s)  R2 %.4f  max resid %5.1f%%  %zu regime(s)  %s\n", cls,
        f.at("alpha_us").get<double>(), f.at("beta_ns_per_byte").get<double>(),
        f.at("beta_ns_per_byte").get<double>() > 0 ? 1.0 / f.at("beta_ns_per_byte").get<double>() : 0.0,
        f.at("r2").get<double>(), 100.0 * f.at("max_rel_residual").get<double>(), f.at("regimes").size(),
        f.at("source").get<std::string>().c_str());
    o << buf;
    for (const auto& g : f.at("regimes")) {
      // Burst credit (alpha_beta.hpp SizeRegime): once per phase in the formulas above.
      const double credit_us = g.value("credit_us", 0.0);
      char credit[64] = "";
      if (credit_us > 0) std::snprintf(credit, sizeof credit, "  burst credit %.2f us", credit_us);
      std::snprintf(buf, sizeof buf, "#         from %12.0f B: alpha %8.2f us  beta %8.4f ns/B%s\n",
                    g.at("from_bytes").get<double>(), g.at("alpha_us").get<double>(),
                    g.at("beta_ns_per_byte").get<double>(), credit);
      o << buf;
    }
    if (f.at("poor").get<bool>()) o << "#   (!) " << cls << " " << f.at("warning").get<std::string>() << "\n";
  }
  std::snprintf(buf, sizeof buf, "%12s %12s %12s %12s %12s %8s %8s %5s\n", "bytes", "ring_pred_ms", "hier_pred_ms",
                "ring_meas_ms", "hier_meas_ms", "ring_err", "hier_err", "use");
  o << buf;
  bool any_warning = false;
  for (const auto& r : j.at("rows")) {
    auto ms = [&](const char* k) { return r.contains(k) ? r.at(k).get<double>() : -1.0; };
    auto cell = [&](const char* k, const char* fmt) {
      char c[32];
      if (!r.contains(k)) return std::string("-");
      std::snprintf(c, sizeof c, fmt, r.at(k).get<double>());
      return std::string(c);
    };
    const bool warn = !r.at("model_warning").get<std::string>().empty();
    any_warning = any_warning || warn;
    std::snprintf(buf, sizeof buf, "%12.0f %12.3f %12.3f %12s %12s %8s %8s %5s%s\n", r.at("bytes").get<double>(),
                  ms("ring_predicted_ms"), ms("hier_predicted_ms"), cell("ring_measured_ms", "%.3f").c_str(),
                  cell("hier_measured_ms", "%.3f").c_str(), cell("ring_error_pct", "%+.0f%%").c_str(),
                  cell("hier_error_pct", "%+.0f%%").c_str(), r.at("use").get<std::string>().c_str(),
                  warn ? " (!)" : "");
    o << buf;
  }
  if (any_warning) o << "# (!) prediction from a poor fit (see the fit lines above): measure before trusting it\n";
  const double x = j.at("hier_from_bytes").get<double>();
  if (x > 0) {
    std::snprintf(buf, sizeof buf,
                  "# use hier from %.0f bytes on (the model: faster than the flat ring there and above)\n", x);
  } else {
    std::snprintf(buf, sizeof buf, "# use the flat ring: the model finds hier no faster at the largest sizes\n");
  }
  o << buf;
  return o.str();
}

}  // namespace microddp::perf
