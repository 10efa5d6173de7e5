// parameter_agreement.hpp — after a command's training steps, do all ranks hold the same parameters?
// (bench ddp's #wrong column, for the commands that print one verdict line: hooks, analyze.)
// Contract: collective over `comm` (every rank calls it after the same steps); returns the number of
// ranks whose parameter checksum (Trainer::param_checksum: bitwise, every parameter) differs from
// rank 0's, the same on every rank.
#pragma once

#include "comm/communicator.hpp"
#include "ddp/trainer.hpp"

namespace microddp::app {

int ranks_disagreeing_with_rank0(ddp::Trainer& trainer, comm::Communicator& comm);

}  // namespace microddp::app
