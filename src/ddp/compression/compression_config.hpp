// compression_config.hpp — how gradients travel: the compression modes as ONE table, the
// --grad-compression settings and their checks.
//
//   none      fp32 all-reduce of the gradient (the default)
//   fp16      16-bit IEEE half on the wire, fp32 accumulation where the backend allows
//   bf16      bfloat16 on the wire (fp32's exponent range, 8-bit significand), fp32 accumulation
//   powersgd  rank-r approximation of each weight matrix (Vogels et al., NeurIPS 2019), fp32 wire
//
// Error feedback (on by default for every lossy mode): each rank adds the previous step's local
// compression error to its gradient before compressing, so nothing is lost for good, only delayed.
// docs/compression.md explains the modes, their costs and the measurements.
//
// A mode is a CompressionMode everywhere inside the program (parsed once, at the command line or
// when a checkpoint or run record is read); its name appears only at the edges. Every fact about a
// mode is its row of compression_modes() (compression_config.cpp): name, help, whether it is lossy,
// whether it reads the PowerSGD settings, the maker of its compressor, and whether a CUDA graph can
// replay it. Adding a mode: an
// enumerator, one row, and its compressor's file(s) (docs/design.md, "Adding a compression mode").
// Further rows are added at start-up by register_compression_mode (the course's labs, src/labs,
// register theirs from app/main.cpp, as they do strategies: ddp/strategy.hpp); they take the next
// values after the production enumerators, in registration order, so a mode's value means something
// only inside one process: everything that leaves it carries the row's name.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "core/tensor_view.hpp"
#include "kernels/ops.hpp"
#include "model/param_layout.hpp"

namespace microddp::ddp {

// The index of the mode's row in compression_modes() (registered rows: values after PowerSgd).
enum class CompressionMode : std::uint8_t { None, Fp16, Bf16, PowerSgd };

// Every member is a row of ddp/train_config_fields.hpp (the ranks must agree on all of them).
struct GradCompressionConfig {
  CompressionMode mode = CompressionMode::None;  // --grad-compression none|fp16|bf16|powersgd
  std::int64_t powersgd_rank = 4;                // --powersgd-rank R (Vogels et al. reach fp32 accuracy at rank 2-4)
  std::int64_t powersgd_start_step = 0;          // --powersgd-start-step K: steps [0, K) are uncompressed
  bool error_feedback = true;                    // --error-feedback on|off (lossy modes; ignored for none)
};

class GradCompressor;
// Builds a mode's compressor (`ops`: the gradients' device; `seed`: PowerSGD's initial Q).
using GradCompressorMaker = std::unique_ptr<GradCompressor> (*)(const GradCompressionConfig& config, std::uint64_t seed,
                                                                comm::Communicator& comm, kernels::Ops& ops,
                                                                const std::vector<model::ParamInfo>& params,
                                                                core::TensorView grads);

struct CompressionModeRow {
  CompressionMode mode;                // the row's index
  std::string_view name;               // --grad-compression NAME; checkpoints, run records and messages spell it so
  std::string_view help;               // after the name in --grad-compression's help ("": nothing)
  bool lossy = false;                  // the gradient is approximated: error feedback applies
  bool powersgd_settings = false;      // reads --powersgd-rank and --powersgd-start-step
  GradCompressorMaker make = nullptr;  // nullptr: no compressor, the plain fp32 all-reduce
  // Why a step that carries it cannot be captured into a CUDA graph (ddp/step_graph.hpp), in a few
  // words; empty: it can. A compressor's finish() runs host code after the first collective.
  std::string_view graph_obstacle = "its second phase is host-driven";
};

// Every mode, in the order help text lists them (row i is mode i): production, then registered.
std::span<const CompressionModeRow> compression_modes();
// Appends a row (a name not in the table yet, `make` set; its `mode` is ignored) before any thread
// reads the table (start-up), and returns its mode. The row's strings must outlive the program.
CompressionMode register_compression_mode(const CompressionModeRow& row);
const CompressionModeRow& compression_mode_row(CompressionMode mode);
// A row's name; anything else is a core::UsageError naming `what` and listing the choices.
CompressionMode parse_compression_mode(std::string_view name, std::string_view what = "--grad-compression");
std::string_view compression_mode_name(CompressionMode mode);
// Throws core::UsageError for a rank < 1, a negative start step, or a PowerSGD setting given with a
// mode that does not use it (`explicit_powersgd`: the user set one).
void validate_compression(const GradCompressionConfig& c, bool explicit_powersgd = false);

}  // namespace microddp::ddp
