// units.hpp — the byte units the program prints and parses, defined once.
// Sizes on the command line (--bucket-mb, --fit-max-mb, ...) and in reports are MiB (2^20 bytes),
// as PyTorch's bucket_cap_mb is.
#pragma once

namespace microddp::core {

inline constexpr double kMiB = 1024.0 * 1024.0;  // bytes in a MiB

}  // namespace microddp::core
