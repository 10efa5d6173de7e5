// config_agreement.hpp — do all ranks run the same configuration? Checked once at start-up, before
// any collective of the run could mismatch (docs/reliability.md).
//
// Compared: every field ddp/train_config_fields.hpp marks `agree`, then what the run derives from
// the command line and the machine (parameter count, communicator name, device), each as one
// integer (field_code). The field count is compared first, so ranks of different builds cannot
// misalign the exchange.
// Contract: collective (two scalar all-reduces and one all-gather of the codes); any difference is a
// core::UsageError agreed by every rank, naming the field, the rank, its value and rank 0's.
#pragma once

#include <cstdint>

#include "comm/communicator.hpp"
#include "core/dtype.hpp"
#include "ddp/train_config.hpp"

namespace microddp::ddp {

void verify_config_across_ranks(const TrainConfig& config, comm::Communicator& comm, std::int64_t param_count,
                                core::Device device);

}  // namespace microddp::ddp
