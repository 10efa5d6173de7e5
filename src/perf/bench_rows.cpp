// bench_rows.cpp — the reader of benchmark output and the per-(backend, collective) fit.
#include "perf/bench_rows.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "perf/json_input.hpp"

namespace microddp::perf {

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
    row.bytes = std::atof(cnt->c_str()) * static_cast<double>(sizeof(float));  // the benchmarks time float32
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
    if (ch == '"')
      quoted = !quoted;
    else if (ch == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r')
      cur += ch;
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
    if (val.is_string())
      f.kv[lower(key)] = val.get<std::string>();
    else if (val.is_number())
      f.kv[lower(key)] = val.dump();
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
  MDDP_USAGE_CHECK(!rows.empty(),
                   "no benchmark rows (backend, collective, ranks, bytes, time) found in '" << source << "'");
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
