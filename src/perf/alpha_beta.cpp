// alpha_beta.cpp — cost coefficients per algorithm, the weighted least-squares fit, model I/O and
// the reader of `microddp bench collectives` CSV/JSON output.
#include "perf/alpha_beta.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "comm/factory.hpp"
#include "core/error.hpp"

namespace microddp::perf {

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Ring: return "ring";
    case Algorithm::RecursiveDoubling: return "rd";
    case Algorithm::Naive: return "naive";
    case Algorithm::Auto: return "auto";
  }
  return "?";
}

Algorithm parse_algorithm(std::string_view name) {
  if (name == "ring") return Algorithm::Ring;
  if (name == "rd" || name == "recursive_doubling" || name == "recursive-doubling") return Algorithm::RecursiveDoubling;
  if (name == "naive") return Algorithm::Naive;
  if (name == "auto") return Algorithm::Auto;
  MDDP_USAGE_CHECK(false, "unknown algorithm '" << name << "' (ring | rd | naive | auto)");
  return Algorithm::Ring;
}

namespace {

Algorithm modelled(comm::AllReduceAlgorithm a) {
  switch (a) {
    case comm::AllReduceAlgorithm::RecursiveDoubling: return Algorithm::RecursiveDoubling;
    case comm::AllReduceAlgorithm::Naive: return Algorithm::Naive;
    case comm::AllReduceAlgorithm::Ring:
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
    case Collective::AllReduce: return "all_reduce";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllGather: return "all_gather";
    case Collective::Broadcast: return "broadcast";
  }
  return "?";
}

bool parse_collective(std::string_view name, Collective& out) {
  std::string n;
  for (char ch : name) {
    if (ch != '_' && ch != '-') n += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (n == "allreduce") out = Collective::AllReduce;
  else if (n == "reducescatter") out = Collective::ReduceScatter;
  else if (n == "allgather") out = Collective::AllGather;
  else if (n == "broadcast" || n == "bcast") out = Collective::Broadcast;
  else return false;
  return true;
}

namespace {
int floor_log2(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}
int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// The whole file as text; a file that cannot be opened is a usage error naming `what`.
std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  MDDP_USAGE_CHECK(in.good(), "cannot open " << what << " '" << path << "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// nlohmann::json::parse with a nesting limit (its parser and our recursive walk would otherwise
// overflow the stack on "[[[[...") and every parse error turned into a UsageError.
nlohmann::json parse_json_limited(const std::string& text, const std::string& source) {
  constexpr int kMaxDepth = 64;
  bool too_deep = false;
  const nlohmann::json::parser_callback_t limit = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxDepth) too_deep = true;
    return !too_deep;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, limit);
  } catch (const nlohmann::json::exception& e) {
    MDDP_USAGE_CHECK(false, "'" << source << "' is not valid JSON: " << e.what());
  }
  MDDP_USAGE_CHECK(!too_deep, "'" << source << "' nests JSON deeper than " << kMaxDepth << " levels");
  return j;
}

}  // namespace

Coefficients cost_coefficients(Collective coll, Algorithm algo, int ranks, double bytes) {
  Coefficients k;
  if (ranks <= 1) return k;  // nothing leaves the rank
  const double n = ranks, S = bytes;
  algo = resolve_algorithm(algo, ranks, bytes);
  switch (coll) {
    case Collective::AllReduce:
      switch (algo) {
        case Algorithm::Ring:  // n-1 reduce-scatter steps + n-1 all-gather steps of S/n each
          k = {2 * (n - 1), 2 * (n - 1) / n * S, (n - 1) / n * S};
          break;
        case Algorithm::RecursiveDoubling: {  // log2 p exchanges of S (p = largest power of 2 <= n)
          const int p_log = floor_log2(ranks);
          k = {double(p_log), p_log * S, p_log * S};
          if ((1 << p_log) != ranks) {  // the extra ranks fold in first and get the result after
            k.a += 2;
            k.b += 2 * S;
            k.c += S;
          }
          break;
        }
        case Algorithm::Naive:  // n-1 messages into rank 0, n-1 reductions, n-1 messages out
        default:
          k = {2 * (n - 1), 2 * (n - 1) * S, (n - 1) * S};
          break;
      }
      break;
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

FitResult fit_alpha_beta(Collective coll, Algorithm algo, const std::vector<Sample>& samples, double gamma_s_per_byte) {
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
  if (!(det > 1e-12 * saa * sbb) || alpha < 0 || beta < 0) {
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
  r.model = AlphaBeta{alpha, beta, gamma_s_per_byte};
  set_quality(r, coll, algo, samples);
  r.line_rms_rel_residual = r.rms_rel_residual;
  return r;
}

const AlphaBeta& FitResult::model_for(double bytes) const {
  const AlphaBeta* m = &model;
  for (const SizeRegime& g : regimes) {
    if (g.from_bytes > bytes) break;
    m = &g.model;
  }
  return *m;
}

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
  constexpr std::size_t kMinSizes = 3;
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
      g.model = fit_alpha_beta(coll, algo, part, gamma_s_per_byte).model;
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

nlohmann::json regimes_json(const std::vector<SizeRegime>& regimes) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& g : regimes) {
    a.push_back({{"from_bytes", g.from_bytes}, {"alpha_us", g.model.alpha_s * 1e6}, {"beta_ns_per_byte", g.model.beta_s_per_byte * 1e9}});
  }
  return a;
}

nlohmann::json to_json(const CommModel& m) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : m.entries) {
    entries.push_back({{"backend", e.backend},
                       {"collective", collective_name(e.collective)},
                       {"algorithm", algorithm_name(e.algorithm)},
                       {"alpha_us", e.fit.model.alpha_s * 1e6},
                       {"beta_ns_per_byte", e.fit.model.beta_s_per_byte * 1e9},
                       {"gamma_ns_per_byte", e.fit.model.gamma_s_per_byte * 1e9},
                       {"bandwidth_gbytes_per_s", e.fit.model.beta_s_per_byte > 0 ? 1e-9 / e.fit.model.beta_s_per_byte : 0.0},
                       {"samples", e.fit.samples},
                       {"r2", e.fit.r2},
                       {"rms_rel_residual", e.fit.rms_rel_residual},
                       {"max_rel_residual", e.fit.max_rel_residual},
                       {"line_rms_rel_residual", e.fit.line_rms_rel_residual},
                       {"regimes", regimes_json(e.fit.regimes)},
                       {"ranks", e.ranks}});
  }
  return {{"type", "microddp_comm_model"}, {"version", 1}, {"source", m.source}, {"entries", entries}};
}

CommModel comm_model_from_json(const nlohmann::json& j) {
  MDDP_USAGE_CHECK(j.is_object() && j.value("type", "") == "microddp_comm_model",
                   "not a microddp communication model (expected \"type\": \"microddp_comm_model\")");
  CommModel m;
  m.source = j.value("source", "");
  for (const auto& e : j.at("entries")) {
    ModelEntry me;
    me.backend = e.at("backend").get<std::string>();
    MDDP_USAGE_CHECK(parse_collective(e.at("collective").get<std::string>(), me.collective),
                     "unknown collective " << e.at("collective"));
    me.algorithm = parse_algorithm(e.at("algorithm").get<std::string>());
    me.fit.model.alpha_s = e.at("alpha_us").get<double>() * 1e-6;
    me.fit.model.beta_s_per_byte = e.at("beta_ns_per_byte").get<double>() * 1e-9;
    me.fit.model.gamma_s_per_byte = e.value("gamma_ns_per_byte", 0.0) * 1e-9;
    MDDP_USAGE_CHECK(std::isfinite(me.fit.model.alpha_s) && me.fit.model.alpha_s >= 0 &&
                         std::isfinite(me.fit.model.beta_s_per_byte) && me.fit.model.beta_s_per_byte >= 0 &&
                         std::isfinite(me.fit.model.gamma_s_per_byte) && me.fit.model.gamma_s_per_byte >= 0,
                     "communication model entry " << me.backend << "/" << e.at("collective").get<std::string>()
                                                  << ": alpha, beta and gamma must be finite and >= 0");
    me.fit.samples = e.value("samples", 0);
    me.fit.r2 = e.value("r2", 0.0);
    me.fit.rms_rel_residual = e.value("rms_rel_residual", 0.0);
    me.fit.max_rel_residual = e.value("max_rel_residual", 0.0);
    me.fit.line_rms_rel_residual = e.value("line_rms_rel_residual", me.fit.rms_rel_residual);
    double previous_from = -1;
    for (const auto& g : e.value("regimes", nlohmann::json::array())) {
      SizeRegime r;
      r.from_bytes = g.at("from_bytes").get<double>();
      r.model.alpha_s = g.at("alpha_us").get<double>() * 1e-6;
      r.model.beta_s_per_byte = g.at("beta_ns_per_byte").get<double>() * 1e-9;
      r.model.gamma_s_per_byte = me.fit.model.gamma_s_per_byte;
      MDDP_USAGE_CHECK(std::isfinite(r.from_bytes) && r.from_bytes > previous_from && (me.fit.regimes.empty() ? r.from_bytes == 0 : true) &&
                           std::isfinite(r.model.alpha_s) && r.model.alpha_s >= 0 && std::isfinite(r.model.beta_s_per_byte) &&
                           r.model.beta_s_per_byte >= 0,
                       "communication model entry " << me.backend << ": size regime " << me.fit.regimes.size()
                                                    << " needs from_bytes ascending from 0 and finite alpha, beta >= 0");
      previous_from = r.from_bytes;
      me.fit.regimes.push_back(r);
    }
    if (e.contains("ranks")) me.ranks = e.at("ranks").get<std::vector<int>>();
    m.entries.push_back(me);
  }
  return m;
}

CommModel parse_comm_model(const std::string& text, const std::string& source) {
  const nlohmann::json j = parse_json_limited(text, source);
  try {
    return comm_model_from_json(j);
  } catch (const nlohmann::json::exception& e) {  // a missing field or a field of the wrong type
    MDDP_USAGE_CHECK(false, "'" << source << "' is not a valid communication model: " << e.what());
  }
  return {};
}

CommModel load_comm_model(const std::string& path) {
  return parse_comm_model(read_text_file(path, "communication model"), path);
}

void save_comm_model(const CommModel& m, const std::string& path) {
  std::ofstream out(path);
  MDDP_USAGE_CHECK(out.good(), "cannot write '" << path << "'");
  out << to_json(m).dump(2) << "\n";
  MDDP_CHECK(out.good(), "write to '" << path << "' failed");
}

// ---- bench output reader ----
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Field lookup over a flat string map with aliases.
struct Fields {
  std::map<std::string, std::string> kv;
  const std::string* get(std::initializer_list<const char*> names) const {
    for (const char* n : names) {
      auto it = kv.find(n);
      if (it != kv.end() && !it->second.empty()) return &it->second;
    }
    return nullptr;
  }
};

bool row_from_fields(const Fields& f, const std::string& default_backend, int default_ranks, BenchRow& row) {
  const std::string* b = f.get({"backend", "comm", "communicator"});
  const std::string* c = f.get({"collective", "op", "operation", "coll"});
  const std::string* n = f.get({"ranks", "np", "world_size", "nranks", "size_ranks"});
  const std::string* s = f.get({"bytes", "size_bytes", "size", "message_bytes"});
  row.backend = b ? *b : default_backend;
  row.collective = c ? *c : "all_reduce";
  row.ranks = n ? std::atoi(n->c_str()) : default_ranks;
  if (!s) {
    const std::string* cnt = f.get({"count", "elements"});
    if (!cnt) return false;
    row.bytes = std::atof(cnt->c_str()) * 4.0;  // fp32 elements
  } else {
    row.bytes = std::atof(s->c_str());
  }
  // Prefer robust statistics (median) over means when both are there.
  if (const std::string* t = f.get({"median_us", "time_us", "p50_us", "avg_us", "mean_us", "us"})) {
    row.seconds = std::atof(t->c_str()) * 1e-6;
  } else if (const std::string* t2 = f.get({"median_ms", "time_ms", "avg_ms", "mean_ms", "ms"})) {
    row.seconds = std::atof(t2->c_str()) * 1e-3;
  } else if (const std::string* t3 = f.get({"median_s", "time_s", "seconds", "avg_s"})) {
    row.seconds = std::atof(t3->c_str());
  } else {
    return false;
  }
  // Rows with impossible numbers (nan, inf, negative sizes, absurd rank counts) are not data.
  return row.ranks > 0 && row.ranks <= (1 << 24) && std::isfinite(row.seconds) && row.seconds > 0 &&
         std::isfinite(row.bytes) && row.bytes >= 0;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r') cur += ch;
  }
  out.push_back(cur);
  for (auto& s : out) {
    while (!s.empty() && s.front() == ' ') s.erase(s.begin());
    while (!s.empty() && s.back() == ' ') s.pop_back();
  }
  return out;
}

void collect_json_rows(const nlohmann::json& j, const std::string& backend, int ranks, std::vector<BenchRow>& out) {
  if (j.is_array()) {
    for (const auto& x : j) collect_json_rows(x, backend, ranks, out);
    return;
  }
  if (!j.is_object()) return;
  // Configuration at this level applies to nested rows.
  std::string b = backend;
  int n = ranks;
  for (const char* k : {"backend", "comm"})
    if (j.contains(k) && j[k].is_string()) b = j[k].get<std::string>();
  for (const char* k : {"ranks", "np", "world_size"})
    if (j.contains(k) && j[k].is_number_integer()) n = j[k].get<int>();
  bool has_children = false;
  for (const auto& [key, val] : j.items()) {
    if (val.is_array() || val.is_object()) {
      has_children = true;
      collect_json_rows(val, b, n, out);
    }
  }
  Fields f;
  for (const auto& [key, val] : j.items()) {
    if (val.is_string()) f.kv[lower(key)] = val.get<std::string>();
    else if (val.is_number()) f.kv[lower(key)] = val.dump();
  }
  BenchRow row;
  if (row_from_fields(f, b, n, row)) out.push_back(row);
  (void)has_children;
}

}  // namespace

std::vector<BenchRow> parse_bench_rows(const std::string& text, const std::string& source) {
  std::vector<BenchRow> rows;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    // JSON, or JSON Lines (one object per line).
    bool whole = true;
    nlohmann::json j;
    try {
      j = parse_json_limited(text, source);
    } catch (const core::UsageError&) {
      whole = false;
    }
    if (whole) {
      collect_json_rows(j, "", 0, rows);
    } else {
      std::istringstream lines(text);
      std::string line;
      while (std::getline(lines, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        collect_json_rows(parse_json_limited(line, source), "", 0, rows);
      }
    }
  } else {
    std::istringstream lines(text);
    std::string line;
    std::vector<std::string> header;
    while (std::getline(lines, line)) {
      if (line.empty() || line[0] == '#') continue;
      auto cells = split_csv(line);
      if (header.empty()) {
        for (auto& c : cells) header.push_back(lower(c));
        continue;
      }
      Fields f;
      for (std::size_t i = 0; i < cells.size() && i < header.size(); ++i) f.kv[header[i]] = cells[i];
      BenchRow row;
      if (row_from_fields(f, "", 0, row)) rows.push_back(row);
    }
  }
  MDDP_USAGE_CHECK(!rows.empty(), "no benchmark rows (backend, collective, ranks, bytes, time) found in '" << source << "'");
  return rows;
}

std::vector<BenchRow> read_bench_rows(const std::string& path) {
  return parse_bench_rows(read_text_file(path, "benchmark output"), path);
}

CommModel fit_bench_rows(const std::vector<BenchRow>& rows, const std::string& source) {
  std::map<std::pair<std::string, std::string>, std::vector<BenchRow>> groups;
  for (const auto& r : rows) {
    Collective c;
    if (!parse_collective(r.collective, c)) continue;
    groups[{r.backend.empty() ? std::string("mpi") : r.backend, std::string(collective_name(c))}].push_back(r);
  }
  CommModel m;
  m.source = source;
  for (const auto& [key, g] : groups) {
    ModelEntry e;
    e.backend = key.first;
    parse_collective(key.second, e.collective);
    e.algorithm = algorithm_for_backend(e.backend);
    std::vector<Sample> samples;
    std::set<int> ranks;
    std::set<double> sizes;
    for (const auto& r : g) {
      samples.push_back({r.ranks, r.bytes, r.seconds});
      if (r.ranks >= 2) {
        ranks.insert(r.ranks);
        sizes.insert(r.bytes);
      }
    }
    if (sizes.size() < 2) continue;
    e.fit = fit_alpha_beta_regimes(e.collective, e.algorithm, samples);
    e.ranks.assign(ranks.begin(), ranks.end());
    m.entries.push_back(e);
  }
  return m;
}

}  // namespace microddp::perf
