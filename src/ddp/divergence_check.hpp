// divergence_check.hpp — do all ranks still hold the same model? The counterpart of
// comm/runtime/sync_check (which compares the collectives the ranks issued): this compares what they
// computed (docs/reliability.md, "Divergence check").
//
// Entries, in this order: every parameter tensor in layer order (weight, bias), every optimizer state
// tensor per parameter ("layer_03.weight:exp_avg"), and the optimizer's step count. "First
// differing" follows the order, so a corrupted parameter is named before the state that diverges
// because of it. Each entry is hashed with core::state_hash64 (any single differing 64-bit word
// changes the hash); ONE all-reduce (MAX over [h, ~h], 16 bytes per entry, independent of the number
// of ranks) gives every hash's max and min, which agree iff all ranks hold the same bits. The result
// is exact and identical on every rank, so all ranks take the reporting path together.
//
// Contract: verify() is collective over the communicator. It reads the host view of the state (the
// live buffers with CpuOps, a mirror on a GPU that the caller refreshes first). It allocates nothing
// unless ranks differ; then an all-gather (run only then) names the ranks that disagree with rank 0,
// and every rank throws core::AgreedError with the same message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/host_buffer.hpp"
#include "model/optimizer.hpp"
#include "model/param_layout.hpp"

namespace microddp::ddp {

class DivergenceCheck {
 public:
  // `params` (host memory, the flat layout of `infos`) and `state` (the optimizer's host state
  // buffers, same layout) must stay valid for the checker's lifetime.
  DivergenceCheck(comm::Communicator& comm, const std::vector<model::ParamInfo>& infos, const float* params,
                  const std::vector<model::Optimizer::StateBuffer>& state);

  // Throws core::AgreedError "ranks diverged <when>[ <step>]: <entry> differs on rank(s) <r...> from
  // rank 0[ (k of n tensors differ)]" (step < 0: not printed) when any entry differs.
  void verify(const char* when, std::int64_t step, std::int64_t optimizer_steps);

 private:
  void fill_hashes(std::int64_t optimizer_steps);

  struct Entry {
    std::string name;  // "layer_03.weight", "layer_03.weight:exp_avg", "optimizer.steps"
    const void* data;  // nullptr: the optimizer's step count
    std::size_t bytes;
  };
  comm::Communicator& comm_;
  std::vector<Entry> entries_;
  core::HostBuffer<std::int64_t> hashes_;  // [h_0..h_{E-1}, ~h_0..~h_{E-1}], all-reduced (MAX) in place
};

}  // namespace microddp::ddp
