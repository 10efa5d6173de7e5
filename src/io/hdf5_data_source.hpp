// hdf5_data_source.hpp — training data read from an HDF5 file (`train --data`, `inspect`).
//
// What a data file must hold (docs/checkpoint_format.md, "HDF5 data sets"):
//   /inputs   (N, in_dim) float32, or float64 (converted to float32 on read: the model computes in
//             float32; a finite double beyond float32's range is an error, not an Inf), or uint8
//             (pixels: each p becomes p / 255.0f on read, as make-dataset --from-idx scales them)
//   /labels   (N,) integers of any type that fits int64 exactly (int8..int64, uint8..uint32),
//             each in [0, classes)
//   attributes, all optional: format (a fixed- or variable-length string; when present it must be
//             "microddp-dataset", and then format_version must be 1), classes, seed, and whatever else.
// That is what h5py writes the obvious way (f["inputs"] = x; f["labels"] = y with numpy's default
// float64 and int64, no attributes) and what `make-dataset` writes (float32, int32, every attribute,
// io/hdf5_dataset.hpp). The number of classes is the `classes` attribute when there is one, else
// the caller's (--classes, or rank 0's inference passed on), else max label + 1 over all of /labels.
// Other dataset names than /inputs and /labels are given as DataKeys (train --inputs-key/--labels-key).
//
// Hdf5DataSource is a data::DataSource: sample index i maps to row i mod N (epochs wrap), and each
// fill() reads ONLY the requested rows with hyperslab selections (one or two contiguous slices), so
// no rank reads the whole file (inferring the classes does, once, on one rank). Every row read is
// validated (finite features, label in range) before it reaches the model; errors are
// core::UsageError naming the file, the dataset, the row and the value. HDF5 allocates small
// dataspace objects per read, and the conversion buffers grow to the largest read once: the
// exceptions to "the step allocates nothing", accepted because the read itself is a system call.
//
// A file that changes on disk while it is open (truncated, rewritten, replaced) stops the run:
// check_unchanged() runs after every read and at each epoch's end (the trainer's call), and the
// error names the file and what changed. A Fletcher32 checksum filter, where a file has one, is
// verified by HDF5 on every chunk read (its default), so a corrupted chunk is a read error.
//
// fill_rows() (a shuffled epoch's rows, a validation split's) reads scattered rows. A file whose
// rows fit under resident_limit_bytes (default kResidentLimitBytes) is read once, whole, on the
// first fill_rows() and then served from memory: a shuffled batch touches rows all over the file,
// and one hyperslab read per row costs more than the copy (Fashion-MNIST's 60 000 x 784 float32
// rows are 179 MiB per rank). A larger file is read row run by row run: the requested rows are
// sorted, consecutive ones coalesced into one hyperslab read each, and scattered back into the
// requested order (buffers grown once to the largest request). Once resident, fill() copies from
// memory too.
//
// Threads: the HDF5 library here is not built thread-safe (no H5_HAVE_THREADSAFE), so two threads
// must never be inside it at once, and the training thread uses it (checkpoints, a validation file)
// while a loader thread would fill. prepare_fill_off_thread() therefore reads a file that fits
// under the resident limit into memory at once (on the calling thread) and says yes: every later
// fill is a copy from memory, no HDF5 call and no write to shared state. A larger file says no, and
// the trainer keeps filling it on the step's thread (ddp/direct_input.hpp, no prefetching).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/data_source.hpp"
#include "io/hdf5_check.hpp"

namespace microddp::io {

// The names of the two datasets (without the leading '/').
struct DataKeys {
  std::string inputs = "inputs", labels = "labels";
  bool is_default() const { return inputs == "inputs" && labels == "labels"; }
};

class Hdf5DataSource final : public data::DataSource {
 public:
  // Opens PATH read-only and validates its metadata (format if present, shapes, dtypes).
  // classes_if_absent: the number of classes when the file has no `classes` attribute; 0 = infer
  // it here (max label + 1: reads all of /labels). Throws core::UsageError naming the file, the
  // dataset or attribute, what was expected and what was found.
  explicit Hdf5DataSource(const std::string& path, std::int64_t classes_if_absent = 0, DataKeys keys = {});

  std::int64_t in_dim() const override { return in_dim_; }
  std::int64_t classes() const override { return classes_; }
  std::int64_t rows() const override { return rows_; }
  std::string describe() const override;
  void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const override;
  void fill_rows(const std::int64_t* rows, std::int64_t count, float* x, std::int32_t* y) const override;
  // Resident (read whole now if it fits): yes; too large to keep: no (see above).
  bool prepare_fill_off_thread() const override;
  // The file at path() is still the one opened: same device and inode, size and modification time
  // (nanoseconds). Else core::UsageError: "dataset F changed on disk during the run: size A -> B
  // bytes" (or "modification time ...", "replaced by another file", "removed"). HDF5 reads past a
  // file's end as zeros without an error, so every read is followed by this check (a stat): rows
  // read from a file that changed never reach the model.
  void check_unchanged() const override;

  // Bytes of rows (float32 features + int32 labels) up to which fill_rows() keeps the file in memory.
  static constexpr std::int64_t kResidentLimitBytes = std::int64_t{1} << 30;
  void set_resident_limit_bytes(std::int64_t bytes) { resident_limit_bytes_ = bytes; }
  bool resident() const { return !resident_y_.empty(); }  // whether fill_rows() has read the file whole

  enum class ClassesFrom { Attribute, Caller, MaxLabel };
  ClassesFrom classes_from() const { return classes_from_; }
  bool microddp_format() const { return microddp_format_; }          // has format = "microddp-dataset"
  const std::string& inputs_dtype() const { return inputs_dtype_; }  // "float32" | "float64" | "uint8"
  const std::string& labels_dtype() const { return labels_dtype_; }  // "int32", "int64", ...
  // What the file is, in one line for a run's header: "FILE: 500 rows x 12 features (float64,
  // converted to float32), labels int64, 3 classes = max label + 1 (no 'classes' attribute)".
  std::string summary() const;

  const std::string& path() const { return path_; }
  std::int64_t rows_read() const { return rows_read_; }  // total rows fill() has read

 private:
  void read_rows(std::int64_t row, std::int64_t count, float* x, std::int32_t* y) const;
  void read_rows_unchecked(std::int64_t row, std::int64_t count, float* x, std::int32_t* y) const;
  // Reads the whole file into resident_x_/resident_y_ when its rows fit under the limit; true if resident.
  bool make_resident() const;
  // max label + 1 over all of /labels (in blocks); a negative label or fewer than 2 classes is an error.
  std::int64_t infer_classes() const;

  // What check_unchanged() compares: the file as opened.
  struct FileIdentity {
    std::uint64_t device = 0, inode = 0;
    std::int64_t bytes = 0, mtime_ns = 0;  // bytes = -1: stat failed, with errno `error`
    int error = 0;
  };
  static FileIdentity identity_of(const std::string& path);
  std::string path_;
  FileIdentity opened_;
  Hid file_, inputs_, labels_;
  std::int64_t rows_ = 0, in_dim_ = 0, classes_ = 0;
  ClassesFrom classes_from_ = ClassesFrom::Attribute;
  bool microddp_format_ = false;
  bool inputs_f64_ = false;
  bool inputs_u8_ = false;
  DataKeys keys_;
  std::string inputs_name_, labels_name_;  // "/inputs", "/labels" (or the keys given)
  std::string inputs_dtype_, labels_dtype_;
  mutable std::vector<double> x64_;        // float64 rows before conversion (grown once)
  mutable std::vector<std::uint8_t> x8_;   // uint8 rows before scaling (grown once)
  mutable std::vector<std::int64_t> y64_;  // labels before the range check (grown once)
  mutable std::int64_t rows_read_ = 0;
  std::int64_t resident_limit_bytes_ = kResidentLimitBytes;
  mutable std::vector<float> resident_x_;          // (rows, in_dim): the whole file, once read
  mutable std::vector<std::int32_t> resident_y_;   // (rows,)
  mutable std::vector<std::int64_t> order_;        // fill_rows(): request positions sorted by row
  mutable std::vector<float> run_x_;               // one coalesced run of rows
  mutable std::vector<std::int32_t> run_y_;
};

// `inspect`: metadata plus a full scan (in blocks) for NaN/Inf and the label range.
struct DatasetReport {
  std::int64_t samples = 0, in_dim = 0, classes = 0;
  bool microddp_format = false;
  bool classes_inferred = false;  // max label + 1 (no `classes` attribute)
  std::string inputs_dtype, labels_dtype;
  bool has_seed = false;
  std::uint64_t seed = 0;
  std::vector<std::int64_t> label_counts;
};
DatasetReport scan_dataset(const std::string& path);

}  // namespace microddp::io
