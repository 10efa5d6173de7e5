// fuzz_idx_header.cpp — the IDX reader (`make-dataset --from-idx`; io/idx_file.hpp) on arbitrary
// bytes, plain or gzip-compressed: the magic, the type code, the dimensions, the data against them.
// Contract: the reader returns (and then every byte of the items it promised can be read in
// pieces, and the input ends there) or throws core::UsageError; a plain input it accepts holds
// exactly the items its header promises; nothing is allocated from a header's claims
// (run_fuzz.sh's -rss_limit_mb turns a violation into a finding: a header may promise 2^63 bytes).
// The bytes go through an anonymous in-memory file (memfd), so the reader's own open, stat and
// zlib paths are the ones fuzzed.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "fuzz_target.hpp"
#include "io/idx_file.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace microddp;
  const int fd = ::memfd_create("fuzz-idx", 0);
  if (fd < 0) std::abort();
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<std::size_t>(n);
  }
  try {
    io::IdxReader r("/proc/self/fd/" + std::to_string(fd));
    const std::int64_t header = 4 + 4 * static_cast<std::int64_t>(r.dims().size());
    if (r.count() < 1 || r.data_bytes() != r.count() * r.item_bytes()) std::abort();
    if (!r.gzip() && header + r.data_bytes() != static_cast<std::int64_t>(size)) std::abort();
    std::vector<unsigned char> piece(4096);
    for (std::int64_t done = 0; done < r.data_bytes();) {
      const std::int64_t n = std::min<std::int64_t>(4096, r.data_bytes() - done);
      r.read_item_bytes(n, piece.data());
      done += n;
    }
    r.expect_end();
  } catch (const core::UsageError&) {
  }
  ::close(fd);
  return 0;
}
