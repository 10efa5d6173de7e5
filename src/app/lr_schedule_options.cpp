// lr_schedule_options.cpp — the schedule's options and which schedule uses which.
#include "app/lr_schedule_options.hpp"

#include "app/cli_values.hpp"
#include "core/error.hpp"
#include "model/lr_schedule.hpp"

namespace microddp::app {

void add_lr_schedule_options(CLI::App* sub, LrScheduleOptions& o, model::LrScheduleConfig& c) {
  sub->add_option("--lr-schedule", o.kind,
                  "Learning rate per step: constant (--lr), cosine or linear (from --lr down to --min-lr at "
                  "--decay-steps), step (--lr times --lr-gamma at each of --lr-milestones); any of them after "
                  "--warmup-steps of linear warmup")
      ->check(CLI::IsMember(model::kLrScheduleNames.names()))
      ->capture_default_str();
  sub->add_option("--warmup-steps", c.warmup_steps, "Steps of linear warmup: step s < W gets --lr (s+1)/W")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40))
      ->capture_default_str();
  o.min_lr = sub->add_option("--min-lr", c.min_lr, "cosine, linear: the rate the decay ends at")
                 ->check(finite_range(0.0, 1e3))
                 ->capture_default_str();
  o.decay_steps = sub->add_option("--decay-steps", c.decay_steps,
                                  "cosine, linear: the step at which the rate reaches --min-lr, warmup included "
                                  "(default: the run's steps; with --epochs, epochs x steps per epoch)")
                      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  o.milestones = sub->add_option("--lr-milestones", c.milestones,
                                 "step: steps M1,M2,... after which the rate is multiplied by --lr-gamma");
  o.gamma = sub->add_option("--lr-gamma", c.gamma, "step: the factor at each milestone")
                ->check(finite_range(1e-12, 1.0))
                ->capture_default_str();
}

void validate_lr_schedule_options(const LrScheduleOptions& o, model::LrScheduleConfig& c) {
  c.kind = model::parse_lr_schedule(o.kind);
  const bool decays = c.kind == model::LrScheduleKind::Cosine || c.kind == model::LrScheduleKind::Linear;
  const bool steps = c.kind == model::LrScheduleKind::Step;
  auto given = [](const CLI::Option* opt) { return opt != nullptr && opt->count() > 0; };
  for (const CLI::Option* opt : {o.min_lr, o.decay_steps}) {
    MDDP_USAGE_CHECK(!given(opt) || decays, opt->get_name() << " applies to --lr-schedule cosine or linear, not "
                                                            << o.kind);
  }
  for (const CLI::Option* opt : {o.milestones, o.gamma}) {
    MDDP_USAGE_CHECK(!given(opt) || steps, opt->get_name() << " applies to --lr-schedule step, not " << o.kind);
  }
  if (steps) {
    MDDP_USAGE_CHECK(!c.milestones.empty(), "--lr-schedule step needs --lr-milestones M1,M2,...");
    (void)model::parse_milestones(c.milestones, "--lr-milestones");  // a bad list: exit 2 before MPI starts
  }
}

}  // namespace microddp::app
