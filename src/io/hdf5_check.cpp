// hdf5_check.cpp — HDF5 error-stack formatting and handle closing.
#include "io/hdf5_check.hpp"

#include <string>

namespace microddp::io {

void hdf5_quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

namespace {
herr_t collect(unsigned n, const H5E_error2_t* e, void* client) {
  auto* out = static_cast<std::string*>(client);
  // The walk goes innermost first; the innermost message is the most specific ("truncated file").
  if (n < 4 && e->desc != nullptr && e->desc[0] != '\0') {
    if (!out->empty()) *out += "; ";
    *out += std::string(e->func_name ? e->func_name : "?") + ": " + e->desc;
  }
  return 0;
}
}  // namespace

std::string hdf5_error_string() {
  std::string s;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect, &s);
  H5Eclear2(H5E_DEFAULT);
  return s.empty() ? std::string("no HDF5 error message") : s;
}

void Hid::reset() {
  if (id_ < 0) return;
  // Closing can only fail for an invalid id, which would be a bug in this wrapper; ignore it in a
  // destructor (never throw from here).
  switch (H5Iget_type(id_)) {
    case H5I_FILE:
      H5Fclose(id_);
      break;
    case H5I_GROUP:
      H5Gclose(id_);
      break;
    case H5I_DATASET:
      H5Dclose(id_);
      break;
    case H5I_DATASPACE:
      H5Sclose(id_);
      break;
    case H5I_DATATYPE:
      H5Tclose(id_);
      break;
    case H5I_ATTR:
      H5Aclose(id_);
      break;
    case H5I_GENPROP_LST:
      H5Pclose(id_);
      break;
    default:
      break;
  }
  id_ = H5I_INVALID_HID;
}

}  // namespace microddp::io
