// register_labs.cpp — see register_labs.hpp.
#include "labs/register_labs.hpp"

#include "labs/lab_backend.hpp"
#include "labs/lab_hier.hpp"
#include "labs/lab_powersgd.hpp"
#include "labs/lab_strategies.hpp"

namespace microddp::labs {

void register_labs() {
  lab_strategies();  // registers them on first use
  register_lab_backends();
  register_lab_hier_backend();  // lab 11
  lab_powersgd_mode();  // registers it on first use
}

}  // namespace microddp::labs
