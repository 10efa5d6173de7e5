// parameter_agreement.cpp — ranks' parameter checksums against rank 0's (see parameter_agreement.hpp).
#include "app/parameter_agreement.hpp"

#include <cstdint>
#include <vector>

namespace microddp::app {

int ranks_disagreeing_with_rank0(ddp::Trainer& trainer, comm::Communicator& comm) {
  // A host buffer: every backend takes it (the GPU backends stage it), and it is one value per rank.
  auto mine = static_cast<std::int64_t>(trainer.param_checksum());
  std::vector<std::int64_t> all(static_cast<std::size_t>(comm.size()));
  comm.all_gather(core::TensorView::of(&mine, 1), core::TensorView::of(all.data(), comm.size()));
  int wrong = 0;
  for (const std::int64_t c : all) wrong += c != all[0] ? 1 : 0;
  return wrong;
}

}  // namespace microddp::app
