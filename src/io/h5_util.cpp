// h5_util.cpp — attribute and dataset-description helpers.
#include "io/h5_util.hpp"

#include <cstring>
#include <sstream>

#include "core/error.hpp"
#include "io/hdf5_check.hpp"

namespace microddp::io {

namespace {
void write_scalar(hid_t obj, const char* name, hid_t file_type, hid_t mem_type, const void* v) {
  if (H5Aexists(obj, name) > 0) MDDP_HDF5_CHECK(H5Adelete(obj, name));
  Hid space(MDDP_HDF5_CHECK(H5Screate(H5S_SCALAR)));
  Hid attr(MDDP_HDF5_CHECK(H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT)));
  MDDP_HDF5_CHECK(H5Awrite(attr, mem_type, v));
}

Hid open_attr(hid_t obj, const char* name, const std::string& where) {
  const htri_t e = H5Aexists(obj, name);
  MDDP_USAGE_CHECK(e > 0, where << " is missing");
  return Hid(MDDP_HDF5_FILE_CHECK(H5Aopen(obj, name, H5P_DEFAULT), where, "cannot open attribute"));
}

// Reads a scalar numeric attribute of class `cls`, converting to `mem_type`.
void read_scalar(hid_t obj, const char* name, const std::string& where, H5T_class_t cls, hid_t mem_type, void* out,
                 const char* want) {
  Hid attr = open_attr(obj, name, where);
  Hid type(MDDP_HDF5_CHECK(H5Aget_type(attr)));
  Hid space(MDDP_HDF5_CHECK(H5Aget_space(attr)));
  MDDP_USAGE_CHECK(H5Tget_class(type) == cls && H5Sget_simple_extent_npoints(space) == 1,
                   where << " has type " << type_name(type) << " with " << H5Sget_simple_extent_npoints(space)
                         << " element(s), expected one " << want);
  MDDP_HDF5_FILE_CHECK(H5Aread(attr, mem_type, out), where, "cannot read attribute");
}
}  // namespace

void write_attr(hid_t obj, const char* name, std::int64_t v) {
  write_scalar(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}
void write_attr_u64(hid_t obj, const char* name, std::uint64_t v) {
  write_scalar(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}
void write_attr(hid_t obj, const char* name, double v) {
  write_scalar(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

void write_attr(hid_t obj, const char* name, const std::string& v) {
  // Fixed-length, NUL-padded ASCII: h5dump and h5py show it as a plain string.
  Hid type(MDDP_HDF5_CHECK(H5Tcopy(H5T_C_S1)));
  MDDP_HDF5_CHECK(H5Tset_size(type, v.empty() ? 1 : v.size()));
  MDDP_HDF5_CHECK(H5Tset_strpad(type, H5T_STR_NULLPAD));
  if (H5Aexists(obj, name) > 0) MDDP_HDF5_CHECK(H5Adelete(obj, name));
  Hid space(MDDP_HDF5_CHECK(H5Screate(H5S_SCALAR)));
  Hid attr(MDDP_HDF5_CHECK(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT)));
  const std::string padded = v.empty() ? std::string(1, '\0') : v;
  MDDP_HDF5_CHECK(H5Awrite(attr, type, padded.data()));
}

void write_attr_vlen(hid_t obj, const char* name, const std::string& v) {
  Hid type(MDDP_HDF5_CHECK(H5Tcopy(H5T_C_S1)));
  MDDP_HDF5_CHECK(H5Tset_size(type, H5T_VARIABLE));
  MDDP_HDF5_CHECK(H5Tset_cset(type, H5T_CSET_UTF8));
  if (H5Aexists(obj, name) > 0) MDDP_HDF5_CHECK(H5Adelete(obj, name));
  Hid space(MDDP_HDF5_CHECK(H5Screate(H5S_SCALAR)));
  Hid attr(MDDP_HDF5_CHECK(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT)));
  const char* p = v.c_str();
  MDDP_HDF5_CHECK(H5Awrite(attr, type, &p));
}

bool has_attr(hid_t obj, const char* name) { return H5Aexists(obj, name) > 0; }

std::int64_t read_attr_i64(hid_t obj, const char* name, const std::string& where) {
  std::int64_t v = 0;
  read_scalar(obj, name, where, H5T_INTEGER, H5T_NATIVE_INT64, &v, "integer");
  return v;
}

std::uint64_t read_attr_u64(hid_t obj, const char* name, const std::string& where) {
  std::uint64_t v = 0;
  read_scalar(obj, name, where, H5T_INTEGER, H5T_NATIVE_UINT64, &v, "integer");
  return v;
}

double read_attr_f64(hid_t obj, const char* name, const std::string& where) {
  double v = 0;
  read_scalar(obj, name, where, H5T_FLOAT, H5T_NATIVE_DOUBLE, &v, "float");
  return v;
}

std::string read_attr_str(hid_t obj, const char* name, const std::string& where) {
  Hid attr = open_attr(obj, name, where);
  Hid type(MDDP_HDF5_CHECK(H5Aget_type(attr)));
  Hid space(MDDP_HDF5_CHECK(H5Aget_space(attr)));
  MDDP_USAGE_CHECK(H5Tget_class(type) == H5T_STRING && H5Sget_simple_extent_npoints(space) == 1,
                   where << " has type " << type_name(type) << " with " << H5Sget_simple_extent_npoints(space)
                         << " element(s), expected one string");
  // Longer than any name or description we write; bounds what a crafted file can make us allocate.
  constexpr std::size_t kMaxString = 1u << 20;
  if (H5Tis_variable_str(type) > 0) {
    // Variable-length: what h5py writes for a Python str (UTF-8). HDF5 allocates the copy; the
    // memory type keeps the file's character set (HDF5 converts no character sets).
    Hid mem(MDDP_HDF5_CHECK(H5Tcopy(H5T_C_S1)));
    MDDP_HDF5_CHECK(H5Tset_size(mem, H5T_VARIABLE));
    MDDP_HDF5_CHECK(H5Tset_cset(mem, H5Tget_cset(type)));
    char* p = nullptr;
    MDDP_HDF5_FILE_CHECK(H5Aread(attr, mem, &p), where, "cannot read attribute");
    const std::string s = p == nullptr ? std::string() : std::string(p, ::strnlen(p, kMaxString + 1));
    H5free_memory(p);
    MDDP_USAGE_CHECK(s.size() <= kMaxString, where << " is longer than " << kMaxString << " bytes");
    return s;
  }
  const std::size_t n = H5Tget_size(type);
  MDDP_USAGE_CHECK(n > 0 && n < kMaxString, where << " has an implausible string length " << n);
  std::string s(n, '\0');
  MDDP_HDF5_FILE_CHECK(H5Aread(attr, type, s.data()), where, "cannot read attribute");
  s.resize(s.find('\0') == std::string::npos ? n : s.find('\0'));
  return s;
}

bool path_exists(hid_t file, const std::string& path) {
  // H5Lexists needs every intermediate link to exist, so walk the path one component at a time.
  std::size_t pos = 1;
  while (pos <= path.size()) {
    const std::size_t next = path.find('/', pos);
    const std::string prefix = path.substr(0, next);
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return true;
}

std::string type_name(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * size);
    case H5T_FLOAT:
      return "float" + std::to_string(8 * size);
    case H5T_STRING:
      return "string";
    default:
      return "other (HDF5 class " + std::to_string(static_cast<int>(H5Tget_class(type))) + ")";
  }
}

std::vector<std::int64_t> dataset_dims(hid_t dset) {
  Hid space(MDDP_HDF5_CHECK(H5Dget_space(dset)));
  const int rank = MDDP_HDF5_CHECK(H5Sget_simple_extent_ndims(space));
  std::vector<hsize_t> d(static_cast<std::size_t>(rank));
  if (rank > 0) MDDP_HDF5_CHECK(H5Sget_simple_extent_dims(space, d.data(), nullptr));
  return std::vector<std::int64_t>(d.begin(), d.end());
}

std::string dims_string(const std::vector<std::int64_t>& dims) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
  os << (dims.size() == 1 ? ",)" : ")");
  return os.str();
}

}  // namespace microddp::io
