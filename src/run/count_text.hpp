// count_text.hpp — a count with its noun in the right number, for the messages of the commands:
// count_text(1, "collective") is "1 collective", count_text(34, "collective") "34 collectives".
// Regular plurals only (the noun plus "s"); the nouns of our summaries are all regular.
#pragma once

#include <cstdint>
#include <string>

namespace microddp::run {

inline std::string count_text(std::int64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

}  // namespace microddp::run
