// lr_schedule.cpp — the closed forms of lr_schedule.hpp and their checks.
#include "model/lr_schedule.hpp"

#include <charconv>
#include <cmath>
#include <numbers>
#include <sstream>

#include "core/error.hpp"

namespace microddp::model {

std::vector<std::int64_t> parse_milestones(const std::string& text, std::string_view option) {
  std::vector<std::int64_t> out;
  std::size_t i = 0;
  while (i <= text.size()) {
    const std::size_t comma = std::min(text.find(',', i), text.size());
    const std::string_view item(text.data() + i, comma - i);
    std::int64_t v = 0;
    const auto r = std::from_chars(item.data(), item.data() + item.size(), v);
    MDDP_USAGE_CHECK(!item.empty() && r.ec == std::errc() && r.ptr == item.data() + item.size() && v > 0,
                     option << " '" << text << "': '" << item << "' is not a step count > 0 (give M1,M2,... steps)");
    MDDP_USAGE_CHECK(out.empty() || v > out.back(),
                     option << " '" << text << "': milestones must increase (" << out.back() << " then " << v << ")");
    out.push_back(v);
    i = comma + 1;
  }
  return out;
}

LrSchedule::LrSchedule(float base_lr, const LrScheduleConfig& config) : base_(base_lr), config_(config) {
  const auto& c = config_;
  MDDP_USAGE_CHECK(c.warmup_steps >= 0, "--warmup-steps must be >= 0, got " << c.warmup_steps);
  const bool decays = c.kind == LrScheduleKind::Cosine || c.kind == LrScheduleKind::Linear;
  if (decays) {
    MDDP_USAGE_CHECK(std::isfinite(c.min_lr) && c.min_lr >= 0.0f && c.min_lr <= base_lr,
                     "--min-lr " << c.min_lr << " must lie in [0, --lr " << base_lr << "]");
    MDDP_USAGE_CHECK(c.decay_steps > c.warmup_steps,
                     "--lr-schedule " << lr_schedule_name(c.kind) << ": --decay-steps " << c.decay_steps
                                      << " must exceed --warmup-steps " << c.warmup_steps
                                      << " (the decay runs from the end of the warmup to step D)");
  }
  if (c.kind == LrScheduleKind::Step) {
    MDDP_USAGE_CHECK(!c.milestones.empty(), "--lr-schedule step needs --lr-milestones M1,M2,...");
    milestones_ = parse_milestones(c.milestones, "--lr-milestones");
    MDDP_USAGE_CHECK(std::isfinite(c.gamma) && c.gamma > 0.0f && c.gamma <= 1.0f,
                     "--lr-gamma must lie in (0, 1], got " << c.gamma);
  }
}

float LrSchedule::lr(std::int64_t s) const {
  const double base = base_;
  const auto& c = config_;
  if (s < c.warmup_steps) return static_cast<float>(base * static_cast<double>(s + 1) / static_cast<double>(c.warmup_steps));
  const double min = c.min_lr;
  switch (c.kind) {
    case LrScheduleKind::Constant:
      return base_;
    case LrScheduleKind::Cosine:
    case LrScheduleKind::Linear: {
      if (s >= c.decay_steps) return c.min_lr;
      const double p = static_cast<double>(s - c.warmup_steps) / static_cast<double>(c.decay_steps - c.warmup_steps);
      if (c.kind == LrScheduleKind::Cosine)
        return static_cast<float>(min + (base - min) * 0.5 * (1.0 + std::cos(std::numbers::pi * p)));
      return static_cast<float>(base + (min - base) * p);
    }
    case LrScheduleKind::Step: {
      double lr = base;
      for (const std::int64_t m : milestones_) {
        if (m <= s) lr *= static_cast<double>(c.gamma);
      }
      return static_cast<float>(lr);
    }
  }
  return base_;  // not reached
}

std::string LrSchedule::describe() const {
  const auto& c = config_;
  std::ostringstream os;
  os << lr_schedule_name(c.kind);
  switch (c.kind) {
    case LrScheduleKind::Constant:
      os << " " << base_;
      break;
    case LrScheduleKind::Cosine:
    case LrScheduleKind::Linear:
      os << " from " << base_ << " to " << c.min_lr << " over steps " << c.warmup_steps + 1 << ".." << c.decay_steps;
      break;
    case LrScheduleKind::Step:
      os << " from " << base_ << ", x" << c.gamma << " after steps " << c.milestones;
      break;
  }
  if (c.warmup_steps > 0) os << " after " << c.warmup_steps << " linear warmup steps";
  return os.str();
}

}  // namespace microddp::model
