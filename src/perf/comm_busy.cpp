// comm_busy.cpp — interval union and the overlap fraction (see comm_busy.hpp).
#include "perf/comm_busy.hpp"

#include <algorithm>

namespace microddp::perf {

std::int64_t union_length_ns(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.begin_ns < b.begin_ns; });
  std::int64_t total = 0;
  bool open = false;
  Interval cur;  // the merged run being extended
  for (const Interval& i : intervals) {
    if (i.end_ns <= i.begin_ns) continue;
    if (open && i.begin_ns <= cur.end_ns) {
      cur.end_ns = std::max(cur.end_ns, i.end_ns);
      continue;
    }
    if (open) total += cur.end_ns - cur.begin_ns;
    cur = i;
    open = true;
  }
  if (open) total += cur.end_ns - cur.begin_ns;
  return total;
}

double overlap_fraction(double exposed, double busy) {
  if (!(busy > 0)) return 0.0;
  return std::clamp(1.0 - exposed / busy, 0.0, 1.0);
}

}  // namespace microddp::perf
