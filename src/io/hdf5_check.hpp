// hdf5_check.hpp — the HDF5 check macro and an owning handle for HDF5 identifiers.
//
// MDDP_HDF5_CHECK(call): HDF5 calls return a negative value on failure. The macro throws
// core::Error carrying the rank, the call, file:line and HDF5's own error stack (innermost
// message first), e.g. "HDF5 error: H5Fopen: unable to open file: truncated file: eof = 512".
// HDF5's automatic stack printing to stderr is switched off once (hdf5_quiet()) so that each
// error is reported exactly once, by us.
// MDDP_HDF5_FILE_CHECK(call, file, what): the same for untrusted input files, throwing
// core::UsageError (exit code 2) with the file name and what we were doing in front.
//
// Hid owns one identifier (file, group, dataset, dataspace, datatype, attribute, property list)
// and closes it with the matching H5*close when it goes out of scope.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>

#include "core/error.hpp"

namespace microddp::io {

// Turns off HDF5's default error printing (idempotent, cheap).
void hdf5_quiet();
// The current HDF5 error stack of this thread as one line (empty when there is none).
std::string hdf5_error_string();

class Hid {
 public:
  Hid() = default;
  explicit Hid(hid_t id) : id_(id) {}
  ~Hid() { reset(); }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }  // NOLINT: handles are passed straight to H5* calls
  bool valid() const { return id_ >= 0; }
  void reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

}  // namespace microddp::io

#define MDDP_HDF5_CHECK(call)                                                                                         \
  ([&]() {                                                                                                            \
    const auto mddp_h5_rc_ = (call);                                                                                  \
    if (mddp_h5_rc_ < 0) {                                                                                            \
      ::microddp::core::throw_error("HDF5 error: " + ::microddp::io::hdf5_error_string(), #call, __FILE__, __LINE__); \
    }                                                                                                                 \
    return mddp_h5_rc_;                                                                                               \
  }())

#define MDDP_HDF5_FILE_CHECK(call, file, what)                                                     \
  ([&]() {                                                                                         \
    const auto mddp_h5_rc_ = (call);                                                               \
    if (mddp_h5_rc_ < 0) {                                                                         \
      ::microddp::core::throw_usage_error(std::string(file) + ": " + (what) +                      \
                                          " (HDF5: " + ::microddp::io::hdf5_error_string() + ")"); \
    }                                                                                              \
    return mddp_h5_rc_;                                                                            \
  }())
