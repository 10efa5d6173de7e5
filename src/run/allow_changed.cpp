// allow_changed.cpp — the names of --allow-changed, checked against the field table.
#include "run/allow_changed.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "ddp/train_config_fields.hpp"

namespace microddp::run {

namespace {
// The changeable fields, as the help and the messages list them.
std::string changeable_names() {
  std::string s;
  for (const auto& f : ddp::train_config_fields()) {
    if (f.rules.changeable) s += (s.empty() ? "" : ", ") + std::string(f.name);
  }
  return s;
}
}  // namespace

std::vector<std::string> parse_allow_changed(const std::string& list) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  std::size_t i = 0;
  while (i <= list.size()) {
    const std::size_t comma = std::min(list.find(',', i), list.size());
    std::string name = list.substr(i, comma - i);
    i = comma + 1;
    std::replace(name.begin(), name.end(), '-', '_');
    MDDP_USAGE_CHECK(!name.empty(), "--allow-changed '" << list << "': an empty name (give NAME,NAME,...)");
    if (name == "steps" || name == "epochs") continue;  // a resume may always change the run's length
    if (name == "lr_schedule") {  // the schedule with all its settings
      for (const auto& f : ddp::train_config_fields()) {
        if (f.rules.changeable && f.name != "lr") add(std::string(f.name));
      }
      continue;
    }
    const ddp::ConfigField* f = ddp::find_config_field(name);
    MDDP_USAGE_CHECK(f != nullptr, "--allow-changed: unknown setting '" << name << "' (a resume may change: lr, "
                                                                         << "lr-schedule or any of "
                                                                         << changeable_names() << ", steps, epochs)");
    MDDP_USAGE_CHECK(f->rules.changeable || !f->rules.resume,
                     "--allow-changed " << name << ": " << name
                                        << " changes what has been computed so far (the data, the model or the "
                                           "meaning of the optimizer state), so a checkpoint cannot continue with "
                                           "another value; only the learning-rate plan may change ("
                                        << changeable_names() << ")");
    if (f->rules.changeable) add(name);  // a field a resume may change anyway needs no permission
  }
  return out;
}

}  // namespace microddp::run
