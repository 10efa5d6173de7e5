// analysis_report.hpp — the two ways `microddp analyze` prints an Analysis: the text report on
// rank 0's stdout, and the JSON of `analyze --json` (consumed by scripts such as jobs/aggregate.py:
// its fields are an interface, tests/perf checks them).
// Contract: both printers read only the Analysis they are given; neither computes anything the
// other could disagree with.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "perf/analysis.hpp"

namespace microddp::perf {

nlohmann::json to_json(const Analysis& a);
std::string format_report(const Analysis& a);

}  // namespace microddp::perf
