// fuzz_comm_model.cpp — the reader of fitted communication-model files (`analyze --model FILE`).
// Contract: a model whose coefficients are finite and >= 0, or core::UsageError.
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "fuzz_target.hpp"
#include "perf/comm_model_io.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto m = microddp::perf::parse_comm_model(text, "fuzz-input");
    for (const auto& e : m.entries) {
      if (!(std::isfinite(e.fit.model.alpha_s) && e.fit.model.alpha_s >= 0 &&
            std::isfinite(e.fit.model.beta_s_per_byte)))
        std::abort();
    }
  } catch (const microddp::core::UsageError&) {}
  return 0;
}
