// lab_commands.cpp — see lab_commands.hpp.
#include "app/lab_commands.hpp"

#include "app/manual_replicas.hpp"
#include "labs/lab_api.hpp"

namespace microddp::app {

void register_lab_combiner() {
  register_replica_combiner({"lab", "YOUR function of lab 01, docs/labs/01-manual-averaging",
                             "gradients combined by lab 01's function (--average lab)",
                             " (--average lab: lab 01's function left the replicas' gradients different)",
                             &labs::combine_replica_gradients});
}

}  // namespace microddp::app
