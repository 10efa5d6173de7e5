// best_model.cpp — the improvement rule and the patience count.
#include "run/best_model.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace microddp::run {

BestModel::BestModel(const BestModelOptions& o)
    : metric_(!o.save_best.empty() ? o.save_best : (o.patience > 0 ? "val_loss" : "")),
      saves_(!o.save_best.empty()),
      patience_(o.patience),
      min_delta_(o.min_delta) {}

std::string BestModel::restore(const io::RunInfo& r) {
  if (!active() || r.best_step == 0) return "";
  if (r.best_metric != metric_) {
    return "the checkpoint tracked the best " + (r.best_metric.empty() ? std::string("of nothing") : r.best_metric) +
           ", this run tracks " + metric_ + ": starting afresh";
  }
  best_value_ = r.best_value;
  best_step_ = r.best_step;
  evals_since_best_ = r.evals_since_best;
  return "";
}

void BestModel::store(io::RunInfo& r) const {
  r.best_metric = active() ? metric_ : "";
  r.best_value = best_value_;
  r.best_step = best_step_;
  r.evals_since_best = evals_since_best_;
}

bool BestModel::observe(double loss, double accuracy, std::int64_t step) {
  if (!active()) return false;
  const bool by_loss = metric_ == "val_loss";
  const double v = by_loss ? loss : accuracy;
  // NaN never improves (a diverged model is not the best one).
  const bool improved =
      !std::isnan(v) && (best_step_ == 0 || (by_loss ? v < best_value_ - min_delta_ : v > best_value_ + min_delta_));
  if (improved) {
    best_value_ = v;
    best_step_ = step;
    evals_since_best_ = 0;
  } else {
    ++evals_since_best_;
  }
  return improved;
}

std::string BestModel::describe(const std::string& checkpoint_dir) const {
  std::string what = saves_ ? "best.h5 in " + checkpoint_dir + " at each new best " + metric_ : "watching " + metric_;
  if (patience_ > 0) {
    char stop[160];
    std::snprintf(stop, sizeof stop, "; early stop after %lld evaluation%s without an improvement",
                  static_cast<long long>(patience_), patience_ == 1 ? "" : "s");
    what += stop;
    if (min_delta_ > 0) {
      std::snprintf(stop, sizeof stop, " of more than %g", min_delta_);
      what += stop;
    }
  }
  if (have_best()) what += " (so far: " + best_text() + ")";
  return what;
}

std::string BestModel::best_text() const {
  char b[96];
  std::snprintf(b, sizeof b, "%s %.6g at step %lld", metric_.c_str(), best_value_, static_cast<long long>(best_step_));
  return b;
}

std::string BestModel::stop_reason() const {
  char b[192];
  std::snprintf(b, sizeof b, "%s has not improved on %.6g (step %lld) by more than %g in %lld evaluation%s",
                metric_.c_str(), best_value_, static_cast<long long>(best_step_), min_delta_,
                static_cast<long long>(evals_since_best_), evals_since_best_ == 1 ? "" : "s");
  return b;
}

}  // namespace microddp::run
