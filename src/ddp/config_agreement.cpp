// config_agreement.cpp — the start-up comparison of the ranks' configurations.
#include "ddp/config_agreement.hpp"

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "ddp/train_config_fields.hpp"

namespace microddp::ddp {

void verify_config_across_ranks(const TrainConfig& config, comm::Communicator& comm, std::int64_t param_count,
                                core::Device device) {
  // Every configuration field the table marks `agree`, then what the run derives from the command
  // line and the machine, each as one integer (train_config_fields.hpp: field_code).
  struct Entry {
    std::string_view name;
    std::int64_t code;
    const ConfigField* field;  // nullptr: not a configuration field, the code is the value
  };
  auto hash_str = [](std::string_view s) { return static_cast<std::int64_t>(core::fnv1a64(s.data(), s.size())); };
  std::vector<Entry> fields;
  for (const auto& f : train_config_fields()) {
    if (f.rules.agree) fields.push_back({f.name, field_code(f, config), &f});
  }
  fields.push_back({"param_count", param_count, nullptr});
  fields.push_back({"communicator (name hash)", hash_str(comm.name()), nullptr});
  fields.push_back({"device (0 cpu, 1 cuda)", static_cast<std::int64_t>(device), nullptr});
  auto text = [](const Entry& e, std::int64_t code) {
    return e.field ? code_text(*e.field, code) : std::to_string(code);
  };

  const auto n = static_cast<std::int64_t>(fields.size());
  std::vector<std::int64_t> mine(fields.size());
  for (std::size_t i = 0; i < fields.size(); ++i) mine[i] = fields[i].code;
  std::vector<std::int64_t> all(fields.size() * static_cast<std::size_t>(comm.size()));
  // The field count itself is compared first, so a different build cannot misalign the exchange.
  std::int64_t count_mine = n, count_max = 0, count_min = 0;
  comm.all_reduce(core::TensorView::of(&count_mine, 1), core::TensorView::of(&count_max, 1), comm::ReduceOp::Max);
  comm.all_reduce(core::TensorView::of(&count_mine, 1), core::TensorView::of(&count_min, 1), comm::ReduceOp::Min);
  MDDP_AGREED_USAGE_CHECK(count_max == count_min, "ranks run different microddp builds (configuration has "
                                                      << count_min << " vs " << count_max << " fields)");
  comm.all_gather(core::TensorView::of(mine.data(), n), core::TensorView::of(all.data(), n * comm.size()));
  for (int r = 1; r < comm.size(); ++r) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const std::int64_t v0 = all[i], vr = all[static_cast<std::size_t>(r) * fields.size() + i];
      MDDP_AGREED_USAGE_CHECK(v0 == vr, "configuration mismatch: rank "
                                            << r << " has " << fields[i].name << " = " << text(fields[i], vr)
                                            << " but rank 0 has " << text(fields[i], v0)
                                            << " (all ranks must be started with the same options)");
    }
  }
}

}  // namespace microddp::ddp
