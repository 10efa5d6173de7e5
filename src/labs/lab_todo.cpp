// lab_todo.cpp — see lab_api.hpp.
#include <string>

#include "core/error.hpp"
#include "labs/lab_api.hpp"

namespace microddp::labs {

void lab_todo(std::string_view lab, std::string_view function, std::string_view file) {
  throw core::UsageError("lab " + std::string(lab) + " is not done yet: write " + std::string(function) + " in " +
                             std::string(file) + " (docs/labs/README.md), rebuild, and run its grader",
                         /*agreed=*/true);
}

}  // namespace microddp::labs
