// fuzz_npy_header.cpp — the NumPy .npy reader (`make-dataset --from-npy`, and each array of a
// `--from-npz` archive; io/npy_file.hpp) on arbitrary bytes: the magic, the version, the header
// length, the dict literal (descr, fortran_order, shape), the data size against the header.
// Contract: the reader returns (and then every element it promised can be read) or throws
// core::UsageError; it allocates nothing from a header's claims before checking them against the
// input's size (run_fuzz.sh's -rss_limit_mb turns a violation into a finding).
#include <cstdlib>
#include <vector>

#include "core/error.hpp"
#include "fuzz_target.hpp"
#include "io/npy_file.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace microddp;
  try {
    io::NpyReader r(io::memory_source(data, static_cast<std::int64_t>(size), "fuzz-input"));
    const io::NpyHeader& h = r.header();
    if (h.count < 0 || h.data_bytes != h.count * h.dtype.bytes ||
        h.header_bytes + h.data_bytes != static_cast<std::int64_t>(size))
      std::abort();  // a header the reader accepted must describe exactly the input
    std::vector<unsigned char> block(4096 * 8);
    for (std::int64_t done = 0; done < h.count;) {
      const std::int64_t n = std::min<std::int64_t>(4096, h.count - done);
      r.read(n, block.data());
      done += n;
    }
  } catch (const core::UsageError&) {
  }
  return 0;
}
