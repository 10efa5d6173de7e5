// h5_mutate.cpp — damages an HDF5 file in one precise way, for the corruption tests.
//   h5_mutate flip FILE DSET          flip one byte inside DSET's raw data (H5Dget_offset + 5)
//   h5_mutate delete FILE DSET        unlink DSET
//   h5_mutate reshape FILE DSET       replace DSET by a float32 (2, 2) dataset (same attributes kept off)
//   h5_mutate retype FILE DSET        replace DSET by an int32 dataset of the same shape
//   h5_mutate setint FILE OBJ NAME V  overwrite integer attribute NAME of OBJ with V
// Exit code 0 on success, 1 on any failure (message on stderr).
#include <hdf5.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
int fail(const char* what) {
  std::fprintf(stderr, "h5_mutate: %s failed\n", what);
  return 1;
}

int replace(hid_t f, const char* dset, bool keep_shape) {
  hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
  if (d < 0) return fail("open dataset");
  hid_t s = H5Dget_space(d);
  const int nd = H5Sget_simple_extent_ndims(s);
  std::vector<hsize_t> dims(static_cast<std::size_t>(nd));
  H5Sget_simple_extent_dims(s, dims.data(), nullptr);
  H5Sclose(s);
  H5Dclose(d);
  if (H5Ldelete(f, dset, H5P_DEFAULT) < 0) return fail("delete");
  hid_t type = keep_shape ? H5T_STD_I32LE : H5T_IEEE_F32LE;
  std::vector<hsize_t> nd2 = keep_shape ? dims : std::vector<hsize_t>{2, 2};
  hid_t sp = H5Screate_simple(static_cast<int>(nd2.size()), nd2.data(), nullptr);
  hid_t nd3 = H5Dcreate2(f, dset, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (nd3 < 0) return fail("create");
  H5Dclose(nd3);
  H5Sclose(sp);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: h5_mutate flip|delete|reshape|retype|setint FILE DSET|OBJ [NAME VALUE]\n");
    return 1;
  }
  const std::string op = argv[1];
  const char* file = argv[2];
  const char* obj = argv[3];
  if (op == "flip") {
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return fail("open file");
    hid_t d = H5Dopen2(f, obj, H5P_DEFAULT);
    if (d < 0) return fail("open dataset");
    const haddr_t off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    if (off == HADDR_UNDEF) return fail("H5Dget_offset");
    FILE* fp = std::fopen(file, "r+b");
    if (fp == nullptr) return fail("fopen");
    std::fseek(fp, static_cast<long>(off + 5), SEEK_SET);
    const int c = std::fgetc(fp);
    std::fseek(fp, static_cast<long>(off + 5), SEEK_SET);
    std::fputc(c ^ 0x5a, fp);
    std::fclose(fp);
    return 0;
  }
  hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) return fail("open file");
  int rc = 0;
  if (op == "delete") {
    rc = H5Ldelete(f, obj, H5P_DEFAULT) < 0 ? fail("delete") : 0;
  } else if (op == "reshape" || op == "retype") {
    rc = replace(f, obj, op == "retype");
  } else if (op == "setint" && argc == 6) {
    hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
    const long long v = std::atoll(argv[5]);
    if (H5Aexists(o, argv[4]) > 0) H5Adelete(o, argv[4]);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(o, argv[4], H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    rc = H5Awrite(a, H5T_NATIVE_LLONG, &v) < 0 ? fail("write attribute") : 0;
    H5Aclose(a);
    H5Sclose(sp);
    H5Oclose(o);
  } else {
    rc = fail("unknown operation");
  }
  H5Fclose(f);
  return rc;
}
