#pragma once
// The median of a sample: what every benchmark and probe reports, because the shared machines are
// noisy and a mean follows the one slow repetition. Written once, here.
#include <vector>

namespace microddp::perf {

// The middle value (the mean of the two middle values for an even count); 0 for an empty sample,
// so a table row with no measurement prints 0 rather than failing.
double median(std::vector<double> v);

}  // namespace microddp::perf
