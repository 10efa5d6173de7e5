// fuzz_bench_rows.cpp — the reader of `microddp bench collectives` output (CSV, JSON, JSON Lines)
// that `microddp analyze --bench FILE` fits the alpha-beta model from.
// Contract: rows, or core::UsageError; every returned row has finite, positive numbers.
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "fuzz_target.hpp"
#include "perf/bench_rows.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto rows = microddp::perf::parse_bench_rows(text, "fuzz-input");
    for (const auto& r : rows) {
      if (!(r.ranks > 0 && std::isfinite(r.seconds) && r.seconds > 0 && std::isfinite(r.bytes) && r.bytes >= 0))
        std::abort();
    }
    (void)microddp::perf::fit_bench_rows(rows, "fuzz-input");
  } catch (const microddp::core::UsageError&) {}
  return 0;
}
