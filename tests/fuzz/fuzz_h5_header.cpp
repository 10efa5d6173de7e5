// fuzz_h5_header.cpp — the checkpoint and dataset readers (`train --resume`, `train --data`,
// `inspect`) against damaged files.
//
// Structure-aware: flipping random bytes of an HDF5 file mostly exercises HDF5's own metadata
// parser, which is not ours to fix. What we own is how our readers interpret what HDF5 hands
// them: attribute values and types, dataset shapes and dtypes, missing objects, damaged raw
// data, truncation. So an input is a small program of edits applied to a valid seed file
// (MICRODDP_FUZZ_CHECKPOINT, MICRODDP_FUZZ_DATASET), then the reader runs on the result.
// Contract: the reader returns or throws core::UsageError, nothing else; no sanitizer report.
#include <hdf5.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "fuzz_target.hpp"
#include "io/checkpoint.hpp"
#include "io/hdf5_data_source.hpp"
#include "io/hdf5_dataset.hpp"

namespace {

struct Seed {
  std::vector<char> bytes;
  std::vector<std::string> datasets;                            // paths
  std::vector<std::pair<std::string, std::string>> attributes;  // (object path, name)
};
Seed g_seeds[2];  // 0: checkpoint, 1: dataset
std::string g_work;

herr_t collect_attr(hid_t, const char* name, const H5A_info_t*, void* op) {
  auto* v = static_cast<std::vector<std::string>*>(op);
  v->push_back(name);
  return 0;
}

herr_t collect_object(hid_t root, const char* name, const H5O_info_t* info, void* op) {
  auto* s = static_cast<Seed*>(op);
  std::string path = "/";
  if (std::strcmp(name, ".") != 0) path.append(name);
  if (info->type == H5O_TYPE_DATASET) s->datasets.push_back(path);
  hid_t obj = H5Oopen(root, name, H5P_DEFAULT);
  std::vector<std::string> names;
  H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_attr, &names);
  H5Oclose(obj);
  for (auto& n : names) s->attributes.emplace_back(path, n);
  return 0;
}

bool load_seed(const char* env, Seed& s) {
  const char* path = std::getenv(env);
  if (path == nullptr) return false;
  std::ifstream in(path, std::ios::binary);
  s.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return false;
  H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, collect_object, &s, H5O_INFO_BASIC);
  H5Fclose(f);
  return !s.bytes.empty();
}

// Reads the fuzz input as a stream of small integers.
struct Reader {
  const std::uint8_t* p;
  std::size_t n;
  bool empty() const { return n == 0; }
  std::uint64_t take(int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes && n > 0; ++i, --n) v = (v << 8) | *p++;
    return v;
  }
};

void set_attr(hid_t f, const std::pair<std::string, std::string>& a, hid_t type, const void* value,
              std::size_t str_len = 0) {
  hid_t obj = H5Oopen(f, a.first.c_str(), H5P_DEFAULT);
  if (obj < 0) return;
  H5Adelete(obj, a.second.c_str());
  hid_t t = type;
  if (str_len > 0) {
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, str_len);
  }
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(obj, a.second.c_str(), t, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr >= 0) {
    H5Awrite(attr, t, value);
    H5Aclose(attr);
  }
  H5Sclose(space);
  if (str_len > 0) H5Tclose(t);
  H5Oclose(obj);
}

void replace_dataset(hid_t f, const std::string& path, hid_t type, const std::vector<hsize_t>& dims) {
  H5Ldelete(f, path.c_str(), H5P_DEFAULT);
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t d = H5Dcreate2(f, path.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d >= 0) H5Dclose(d);
  H5Sclose(space);
}

void flip_data_byte(const std::string& file, hid_t f, const std::string& dset, std::uint64_t where) {
  hid_t d = H5Dopen2(f, dset.c_str(), H5P_DEFAULT);
  if (d < 0) return;
  const haddr_t off = H5Dget_offset(d);
  const hsize_t size = H5Dget_storage_size(d);
  H5Dclose(d);
  if (off == HADDR_UNDEF || size == 0) return;
  H5Fflush(f, H5F_SCOPE_GLOBAL);
  std::FILE* fp = std::fopen(file.c_str(), "r+b");
  if (fp == nullptr) return;
  std::fseek(fp, static_cast<long>(off + where % size), SEEK_SET);
  const int c = std::fgetc(fp);
  std::fseek(fp, static_cast<long>(off + where % size), SEEK_SET);
  std::fputc(c ^ 0x5a, fp);
  std::fclose(fp);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const bool ck = load_seed("MICRODDP_FUZZ_CHECKPOINT", g_seeds[0]);
  const bool ds = load_seed("MICRODDP_FUZZ_DATASET", g_seeds[1]);
  if (!ck || !ds) {
    std::fprintf(stderr,
                 "fuzz_h5_header: set MICRODDP_FUZZ_CHECKPOINT and MICRODDP_FUZZ_DATASET to valid seed files\n");
    std::exit(1);
  }
  g_work =
      (std::filesystem::temp_directory_path() / ("microddp_fuzz_h5_" + std::to_string(::getpid()) + ".h5")).string();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader in{data, size};
  const int which = static_cast<int>(in.take(1) % 2);
  const Seed& seed = g_seeds[which];
  {
    std::ofstream out(g_work, std::ios::binary | std::ios::trunc);
    out.write(seed.bytes.data(), static_cast<std::streamsize>(seed.bytes.size()));
  }
  std::uint64_t truncate_to = 0;
  hid_t f = H5Fopen(g_work.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) std::abort();  // the seed itself must open
  for (int ops = 0; ops < 8 && !in.empty(); ++ops) {
    const int op = static_cast<int>(in.take(1) % 9);
    const auto& attr = seed.attributes[in.take(1) % seed.attributes.size()];
    const auto& dset = seed.datasets[in.take(1) % seed.datasets.size()];
    switch (op) {
      case 0: {  // integer attribute with an arbitrary value
        const auto v = static_cast<std::int64_t>(in.take(8));
        set_attr(f, attr, H5T_NATIVE_INT64, &v);
        break;
      }
      case 1: {  // floating-point attribute (nan, inf, huge, negative)
        const std::uint64_t bits = in.take(8);
        double v;
        std::memcpy(&v, &bits, sizeof v);
        set_attr(f, attr, H5T_NATIVE_DOUBLE, &v);
        break;
      }
      case 2: {  // string attribute with arbitrary bytes
        std::string v;
        const auto len = 1 + in.take(1) % 24;
        for (std::uint64_t i = 0; i < len; ++i) v += static_cast<char>(in.take(1));
        set_attr(f, attr, H5T_C_S1, v.data(), v.size());
        break;
      }
      case 3: {  // attribute missing
        hid_t obj = H5Oopen(f, attr.first.c_str(), H5P_DEFAULT);
        if (obj >= 0) {
          H5Adelete(obj, attr.second.c_str());
          H5Oclose(obj);
        }
        break;
      }
      case 4:  // dataset missing
        H5Ldelete(f, dset.c_str(), H5P_DEFAULT);
        break;
      case 5: {  // dataset of another shape
        std::vector<hsize_t> dims(1 + in.take(1) % 3);
        for (auto& d : dims) d = in.take(1) % 9;
        replace_dataset(f, dset, H5T_NATIVE_FLOAT, dims);
        break;
      }
      case 6: {  // dataset of another dtype, same shape
        hid_t d = H5Dopen2(f, dset.c_str(), H5P_DEFAULT);
        if (d < 0) break;
        hid_t space = H5Dget_space(d);
        std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(0, H5Sget_simple_extent_ndims(space))));
        H5Sget_simple_extent_dims(space, dims.data(), nullptr);
        H5Sclose(space);
        H5Dclose(d);
        const hid_t types[] = {H5T_NATIVE_INT32, H5T_NATIVE_DOUBLE, H5T_NATIVE_INT8, H5T_NATIVE_FLOAT};
        replace_dataset(f, dset, types[in.take(1) % 4], dims);
        break;
      }
      case 7:  // damaged raw data
        flip_data_byte(g_work, f, dset, in.take(4));
        break;
      case 8:  // truncated file (applied after closing)
        truncate_to = 1 + in.take(4) % seed.bytes.size();
        break;
    }
  }
  H5Fclose(f);
  if (truncate_to > 0) std::filesystem::resize_file(g_work, truncate_to);
  try {
    if (which == 0) {
      (void)microddp::io::read_checkpoint(g_work);
    } else {
      (void)microddp::io::scan_dataset(g_work);
    }
  } catch (const microddp::core::UsageError&) {}
  return 0;
}
