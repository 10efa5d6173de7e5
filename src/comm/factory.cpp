// factory.cpp — backend selection by name (--comm).
#include "comm/factory.hpp"

#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"

namespace microddp::comm {

std::vector<std::string> available_backends() { return {"mpi"}; }

std::unique_ptr<Communicator> make_communicator(std::string_view name, const MpiRuntime& runtime) {
  if (name == "mpi") return std::make_unique<MpiCommunicator>(runtime.world());
  std::string list;
  for (const auto& b : available_backends()) list += (list.empty() ? "" : ", ") + b;
  MDDP_USAGE_CHECK(false, "unknown communication backend '" << name << "' (this build has: " << list << ")");
  return nullptr;
}

}  // namespace microddp::comm
