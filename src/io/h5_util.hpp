// h5_util.hpp — small helpers over the HDF5 C API shared by checkpoints and datasets:
// scalar attributes (int64, uint64, float64, strings), dataset description ("float32 (16, 8)") and
// existence checks along a path. Strings are written fixed-length ASCII and read in either form:
// fixed-length (what we and numpy's bytes write) or variable-length (what h5py writes for a str).
//
// Readers treat files as untrusted input: a missing attribute or one of the wrong kind throws
// core::UsageError naming `where` (the caller passes "FILE: attribute 'x'"), never reads garbage.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace microddp::io {

void write_attr(hid_t obj, const char* name, std::int64_t v);
void write_attr_u64(hid_t obj, const char* name, std::uint64_t v);
void write_attr(hid_t obj, const char* name, double v);
void write_attr(hid_t obj, const char* name, const std::string& v);
// A variable-length UTF-8 string: what h5py writes for a Python str and reads back as str (a
// fixed-length one reads back as bytes), for files meant for Python (io/model_export.hpp).
void write_attr_vlen(hid_t obj, const char* name, const std::string& v);

bool has_attr(hid_t obj, const char* name);
std::int64_t read_attr_i64(hid_t obj, const char* name, const std::string& where);
std::uint64_t read_attr_u64(hid_t obj, const char* name, const std::string& where);
double read_attr_f64(hid_t obj, const char* name, const std::string& where);
std::string read_attr_str(hid_t obj, const char* name, const std::string& where);

// True when every link along the absolute path ("/model/layer_03/weight") exists.
bool path_exists(hid_t file, const std::string& path);
// "float32", "int32", "float64", "uint8", "string", ... for a dataset or attribute type.
std::string type_name(hid_t type);
// Dimensions of a dataset's dataspace.
std::vector<std::int64_t> dataset_dims(hid_t dset);
std::string dims_string(const std::vector<std::int64_t>& dims);

}  // namespace microddp::io
