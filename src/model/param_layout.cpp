// param_layout.cpp — see param_layout.hpp.
#include "model/param_layout.hpp"

#include <cstdio>

#include "core/error.hpp"

namespace microddp::model {

std::vector<ParamInfo> param_layout(const MlpConfig& c) {
  MDDP_CHECK(c.in_dim > 0 && c.width > 0 && c.depth >= 1 && c.classes >= 2,
             "bad MLP shape: in_dim " << c.in_dim << ", width " << c.width << ", depth " << c.depth << ", classes "
                                      << c.classes);
  std::vector<ParamInfo> out;
  out.reserve(static_cast<std::size_t>(2 * (c.depth + 1)));
  std::int64_t offset = 0;
  for (std::int64_t layer = c.depth; layer >= 0; --layer) {
    const std::int64_t rows = layer == c.depth ? c.classes : c.width;  // out features
    const std::int64_t cols = layer == 0 ? c.in_dim : c.width;         // in features
    MDDP_CHECK(rows <= INT64_MAX / cols, "layer " << layer << " has more than 2^63 weights");
    char base[32];
    std::snprintf(base, sizeof base, "layer_%02lld", static_cast<long long>(layer));
    out.push_back({std::string(base) + ".bias", static_cast<int>(out.size()), static_cast<int>(layer), true, offset,
                   rows, rows, 1});
    offset += align_param_count(rows);
    out.push_back({std::string(base) + ".weight", static_cast<int>(out.size()), static_cast<int>(layer), false, offset,
                   rows * cols, rows, cols});
    offset += align_param_count(rows * cols);
  }
  return out;
}

std::int64_t flat_count(const std::vector<ParamInfo>& layout) {
  return layout.empty() ? 0 : align_param_count(layout.back().offset + layout.back().count);
}

std::int64_t parameter_count(const std::vector<ParamInfo>& layout) {
  std::int64_t n = 0;
  for (const auto& p : layout) n += p.count;
  return n;
}

}  // namespace microddp::model
