// bench_rows.hpp — `microddp bench collectives` output (CSV or JSON) read back as timing samples,
// and the communication model fitted from them (`analyze --bench FILE`).
// Contract: reading is hardened (fuzzed: tests/fuzz/fuzz_bench_rows.cpp): malformed text is a
// core::UsageError naming the file; rows whose numbers are impossible are skipped, not trusted.
#pragma once

#include <string>
#include <vector>

#include "perf/alpha_beta.hpp"

namespace microddp::perf {

// One row of `microddp bench collectives` output (CSV or JSON). The reader accepts the usual
// spellings of the fields (backend|comm, collective|op, ranks|np|world_size, bytes|size_bytes,
// and a time in time_us|median_us|avg_us|time_ms|time_s), so it does not break on cosmetic changes.
struct BenchRow {
  std::string backend;
  std::string collective;
  int ranks = 0;
  double bytes = 0;
  double seconds = 0;
};
// Same contract as parse_comm_model: rows whose numbers are not finite and positive are skipped,
// malformed text throws core::UsageError (fuzzed: tests/fuzz/fuzz_bench_rows.cpp).
std::vector<BenchRow> parse_bench_rows(const std::string& text, const std::string& source);
std::vector<BenchRow> read_bench_rows(const std::string& path);
// Fits every (backend, collective) group with >= 2 distinct sizes.
CommModel fit_bench_rows(const std::vector<BenchRow>& rows, const std::string& source);

}  // namespace microddp::perf
