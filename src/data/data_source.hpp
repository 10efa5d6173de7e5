// data_source.hpp — where the trainer gets sample rows from.
//
// Contract: fill(first, count, x, y) writes the global samples [first, first + count) — x as
// (count, in_dim) float32 row-major, y as count int32 labels in [0, classes) — and is a pure function
// of the sample index (docs/design.md: data is a pure function of (seed, global sample index)), so
// any world size sees the same global batches and a resumed run continues where it stopped.
// A finite source (an HDF5 file of N rows) maps sample i to row i mod N (epochs wrap).
// fill_rows(rows, count, x, y) writes the rows of an explicit list instead (shuffled epochs, a
// validation split): row rows[i] into position i, for rows in [0, rows()) (any index of an unbounded
// source). The default reads each run of consecutive rows with one fill(); a file source overrides it.
// Implementations: data::SyntheticDataset (here), io::Hdf5DataSource (src/io).
// A source may also make its rows on a compute device (make_device_generator): the synthetic set
// does, on a GPU, so its rows need no host fill and no upload.
// Threads: every call comes from one thread unless prepare_fill_off_thread() said yes; then fill()
// and fill_rows() may run on one other thread (the prefetching input's loader, ddp/prefetching_input.hpp)
// while the first thread keeps using this and other sources, checkpoints and the library behind them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace microddp::kernels {
class Ops;
}

namespace microddp::data {

// Rows made by an Ops on its own device, into its memory (from DataSource::make_device_generator).
class DeviceRowGenerator {
 public:
  virtual ~DeviceRowGenerator() = default;
  // Queues on the Ops (its stream, on a GPU) the rows that DataSource::fill writes, bit for bit:
  // x(count, in_dim) float32 row-major and y(count) int32, both memory of the Ops' device().
  // Allocates nothing and does not wait.
  virtual void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) = 0;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual std::int64_t in_dim() const = 0;
  virtual std::int64_t classes() const = 0;
  // Rows in one epoch; 0 for an unbounded generator.
  virtual std::int64_t rows() const = 0;
  // What it is, recorded in checkpoints and checked on resume ("synthetic", "hdf5:FILE").
  virtual std::string describe() const = 0;
  // const: a source's observable content never changes (file readers keep handles as mutable state).
  virtual void fill(std::int64_t first, std::int64_t count, float* x, std::int32_t* y) const = 0;
  // Rows rows[0 .. count) (in that order, repeats allowed) into x (count, in_dim) and y (count).
  virtual void fill_rows(const std::int64_t* rows, std::int64_t count, float* x, std::int32_t* y) const {
    std::int64_t i = 0;
    while (i < count) {
      std::int64_t n = 1;
      while (i + n < count && rows[i + n] == rows[i] + n) ++n;
      fill(rows[i], n, x + i * in_dim(), y + i);
      i += n;
    }
  }
  // A generator of these rows on ops.device(), or nullptr if this source has none (then the caller
  // fills host memory and uploads). Called at set-up: it may allocate device memory (the synthetic
  // set's teacher). It keeps a reference to ops and must not outlive it, nor this source.
  virtual std::unique_ptr<DeviceRowGenerator> make_device_generator(kernels::Ops& /*ops*/) const { return nullptr; }
  // Readies fill() and fill_rows() to run on one other thread than every other call of the program
  // (see above), and says whether they may: false keeps them on the caller's thread. Called once, at
  // set-up, on the thread that makes the other calls. Not by default: a source that reads through a
  // library must know that the library tolerates it (the HDF5 build here is not thread-safe, so an
  // HDF5 file says yes only once it holds its rows in memory: io/hdf5_data_source.hpp).
  virtual bool prepare_fill_off_thread() const { return false; }
  // Throws core::UsageError naming the file and what changed when a file behind this source is no
  // longer the one it opened (size, modification time, or another file at its path); a source
  // without files does nothing. The trainer asks at each epoch's end; a file source also checks
  // after each read of its own. Called on the thread of every call but fill (a stat, no library).
  virtual void check_unchanged() const {}
};

}  // namespace microddp::data
