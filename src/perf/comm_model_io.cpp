// comm_model_io.cpp — the communication model file: JSON out, checked JSON in.
#include "perf/comm_model_io.hpp"

#include <cmath>
#include <fstream>

#include "core/error.hpp"
#include "perf/json_input.hpp"

namespace microddp::perf {

nlohmann::json regimes_json(const std::vector<SizeRegime>& regimes) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& g : regimes) {
    a.push_back({{"from_bytes", g.from_bytes},
                 {"alpha_us", g.model.alpha_s * 1e6},
                 {"beta_ns_per_byte", g.model.beta_s_per_byte * 1e9},
                 {"credit_us", g.model.credit_s * 1e6}});
  }
  return a;
}

nlohmann::json to_json(const CommModel& m) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : m.entries) {
    entries.push_back(
        {{"backend", e.backend},
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
      r.model.credit_s = g.value("credit_us", 0.0) * 1e-6;
      // A regime after the first may hold a burst credit (alpha_beta.hpp SizeRegime), if its line is
      // still positive where it starts.
      const bool first = me.fit.regimes.empty();
      MDDP_USAGE_CHECK(
          std::isfinite(r.from_bytes) && r.from_bytes > previous_from && (first ? r.from_bytes == 0 : true) &&
              std::isfinite(r.model.alpha_s) && r.model.alpha_s >= 0 && std::isfinite(r.model.beta_s_per_byte) &&
              r.model.beta_s_per_byte >= 0 && std::isfinite(r.model.credit_s) && r.model.credit_s >= 0 &&
              (first ? r.model.credit_s == 0 : true) &&
              (r.model.credit_s == 0 ||
               r.model.time_s(cost_coefficients(me.collective, me.algorithm, 2, r.from_bytes)) > 0),
          "communication model entry " << me.backend << ": size regime " << me.fit.regimes.size()
                                       << " needs from_bytes ascending from 0, finite alpha, beta, credit >= 0, no "
                                          "credit in the first regime, and a positive time where a later regime starts");
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

}  // namespace microddp::perf
