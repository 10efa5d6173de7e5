// repeated_options.cpp — TakeLast on every option of one value.
#include "app/repeated_options.hpp"

namespace microddp::app {

void last_value_wins(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_positional() || opt->get_expected_max() > 1) continue;
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) last_value_wins(*sub);
}

}  // namespace microddp::app
