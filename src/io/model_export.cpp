// model_export.cpp — one group per layer, weight and bias cut out of the flat buffer (no padding).
#include "io/model_export.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"

namespace microddp::io {

namespace {

void write_tensor(hid_t group, const char* name, const model::ParamInfo& p, const std::vector<float>& flat) {
  const hsize_t dims[2] = {static_cast<hsize_t>(p.rows), static_cast<hsize_t>(p.cols)};
  Hid space(MDDP_HDF5_CHECK(H5Screate_simple(p.is_bias ? 1 : 2, dims, nullptr)));
  Hid ds(MDDP_HDF5_CHECK(H5Dcreate2(group, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  MDDP_HDF5_CHECK(H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, flat.data() + p.offset));
}

}  // namespace

void write_model_export(const std::string& path, const model::MlpConfig& m, const std::vector<float>& flat,
                        const ModelExportInfo& info, const OutputRules& rules) {
  hdf5_quiet();
  const std::vector<model::ParamInfo> layout = model::param_layout(m);
  MDDP_CHECK(
      static_cast<std::int64_t>(flat.size()) == model::flat_count(layout),
      "export: " << flat.size() << " parameters given, the model's flat buffer holds " << model::flat_count(layout));
  OutputFile out(path, rules);
  {
    Hid file(MDDP_HDF5_FILE_CHECK(H5Fcreate(out.temp().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), out.temp(),
                                  "cannot create file"));
    write_attr_vlen(file, "format", kModelFormat);
    write_attr(file, "format_version", kModelFormatVersion);
    write_attr(file, "in_dim", m.in_dim);
    write_attr(file, "width", m.width);
    write_attr(file, "depth", m.depth);
    write_attr(file, "classes", m.classes);
    write_attr(file, "layers", m.depth + 1);
    write_attr_vlen(file, "hidden_activation", "relu");
    write_attr_vlen(file, "output", "logits");
    write_attr_vlen(file, "forward",
                    std::string("h = x; for each layer_NN in order: h = h @ weight.T + bias, then relu(h) = max(h, 0) "
                                "where activation is relu; the last h are the logits"));
    write_attr_vlen(file, "source", info.source);
    write_attr(file, "steps_done", info.steps_done);
    for (std::int64_t l = 0; l <= m.depth; ++l) {
      char name[32];
      std::snprintf(name, sizeof name, "layer_%02lld", static_cast<long long>(l));
      const model::ParamInfo* w = nullptr;
      const model::ParamInfo* b = nullptr;
      for (const auto& p : layout) {
        if (p.layer == l) (p.is_bias ? b : w) = &p;
      }
      MDDP_CHECK(w != nullptr && b != nullptr, "export: layer " << l << " missing from the layout");
      Hid g(MDDP_HDF5_CHECK(H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
      write_attr(g, "in_features", w->cols);
      write_attr(g, "out_features", w->rows);
      write_attr_vlen(g, "activation", l < m.depth ? "relu" : "none");
      write_tensor(g, "weight", *w, flat);
      write_tensor(g, "bias", *b, flat);
    }
    MDDP_HDF5_CHECK(H5Fflush(file, H5F_SCOPE_GLOBAL));
  }
  out.publish();
}

}  // namespace microddp::io
