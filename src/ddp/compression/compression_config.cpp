// compression_config.cpp — the compression mode table, the parser of its names, and the checks of the
// compression settings.
#include "ddp/compression/compression_config.hpp"

#include <iterator>
#include <vector>

#include "core/error.hpp"
#include "ddp/compression/powersgd_compressor.hpp"
#include "ddp/compression/wire16_compressor.hpp"

namespace microddp::ddp {

namespace {

using Params = std::vector<model::ParamInfo>;

std::unique_ptr<GradCompressor> make_fp16(const GradCompressionConfig& config, std::uint64_t, comm::Communicator& comm,
                                          kernels::Ops& ops, const Params& params, core::TensorView grads) {
  return std::make_unique<Wire16Compressor>(comm, ops, params, grads, config, kernels::Wire16::F16);
}
std::unique_ptr<GradCompressor> make_bf16(const GradCompressionConfig& config, std::uint64_t, comm::Communicator& comm,
                                          kernels::Ops& ops, const Params& params, core::TensorView grads) {
  return std::make_unique<Wire16Compressor>(comm, ops, params, grads, config, kernels::Wire16::BF16);
}
std::unique_ptr<GradCompressor> make_powersgd(const GradCompressionConfig& config, std::uint64_t seed,
                                              comm::Communicator& comm, kernels::Ops& ops, const Params& params,
                                              core::TensorView grads) {
  return std::make_unique<PowerSgdCompressor>(comm, ops, params, grads, config, seed);
}

using M = CompressionMode;
constexpr CompressionModeRow kModes[] = {
    {M::None, "none", "fp32", false, false, nullptr, /*graph_obstacle=*/{}},
    {M::Fp16, "fp16", "", true, false, &make_fp16},
    {M::Bf16, "bf16", "16-bit, fp32 accumulation", true, false, &make_bf16},
    {M::PowerSgd, "powersgd", "low rank", true, true, &make_powersgd},
};
constexpr bool rows_at_their_index() {
  for (std::size_t i = 0; i < std::size(kModes); ++i) {
    if (static_cast<std::size_t>(kModes[i].mode) != i) return false;
  }
  return true;
}
static_assert(rows_at_their_index(), "compression mode row i must be mode i");

// The table: the production rows, then the registered ones.
std::vector<CompressionModeRow>& table() {
  static std::vector<CompressionModeRow> rows(std::begin(kModes), std::end(kModes));
  return rows;
}

// "none, fp16, bf16, powersgd"
std::string mode_choices() {
  std::string list;
  for (const auto& row : table()) list += (list.empty() ? "" : ", ") + std::string(row.name);
  return list;
}

}  // namespace

std::span<const CompressionModeRow> compression_modes() { return table(); }

CompressionMode register_compression_mode(const CompressionModeRow& row) {
  std::vector<CompressionModeRow>& rows = table();
  MDDP_CHECK(row.make != nullptr, "compression mode '" << row.name << "': a registered row needs a maker");
  MDDP_CHECK(rows.size() <= 0xff, "compression mode table full");
  for (const auto& r : rows) MDDP_CHECK(r.name != row.name, "compression mode '" << row.name << "' is already a row");
  CompressionModeRow added = row;
  added.mode = static_cast<CompressionMode>(rows.size());
  rows.push_back(added);
  return added.mode;
}

const CompressionModeRow& compression_mode_row(CompressionMode mode) {
  const auto i = static_cast<std::size_t>(mode);
  MDDP_CHECK(i < table().size(), "compression mode " << i << " has no row");
  return table()[i];
}

CompressionMode parse_compression_mode(std::string_view name, std::string_view what) {
  for (const auto& row : table()) {
    if (row.name == name) return row.mode;
  }
  MDDP_USAGE_CHECK(false, "unknown " << what << " '" << name << "' (choose " << mode_choices() << ")");
  return CompressionMode::None;
}

std::string_view compression_mode_name(CompressionMode mode) { return compression_mode_row(mode).name; }

void validate_compression(const GradCompressionConfig& c, bool explicit_powersgd) {
  const CompressionModeRow& row = compression_mode_row(c.mode);
  MDDP_USAGE_CHECK(c.powersgd_rank >= 1 && c.powersgd_rank <= 4096,
                   "--powersgd-rank must be in [1, 4096], got " << c.powersgd_rank);
  MDDP_USAGE_CHECK(c.powersgd_start_step >= 0, "--powersgd-start-step must be >= 0, got " << c.powersgd_start_step);
  if (explicit_powersgd && !row.powersgd_settings) {
    std::string users;
    for (const auto& r : table()) {
      if (r.powersgd_settings) users += (users.empty() ? "" : " or ") + std::string(r.name);
    }
    MDDP_USAGE_CHECK(false, "--powersgd-rank / --powersgd-start-step need --grad-compression " << users << " (got '"
                                                                                               << row.name << "')");
  }
}

}  // namespace microddp::ddp
