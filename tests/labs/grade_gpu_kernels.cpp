// grade_gpu_kernels.cpp — the grader of lab 13 (the GPU track: docs/labs/13-gpu-kernels), in the
// manner of llm.c's dev/cuda: every version of a kernel is checked against a CPU reference, then
// timed. One process, no MPI. Without a CUDA device it prints "no CUDA device: skipped" and exits 77
// (ctest: skipped). The launchers' contract: src/labs/lab_gpu_kernels.hpp.
//
// (a) sum_v1..v3, each:
//   * integer-valued inputs 1..8 at n = 0, 1, 31, 32, 33, 255, 256, 257, 1000, 4099, 65537, 200003:
//     every partial sum is an integer below 2^24, so EVERY order of the additions gives the exact
//     sum, and the result must be bitwise that; since the inputs are positive, a result equal to the
//     sum of a prefix names the elements that were never added (the tail). *out is filled with NaN
//     first (a launcher that does not set it shows).
//   * the same result under several thread orders: on the emulated device the schedules forward,
//     reverse and two shuffles (docs/cuda_emu.md), on a GPU four runs; a result that changes is a race
//     (a missing __syncthreads between the tree's levels);
//   * random normal inputs (n = 1000) against a float64 sum, within the bound every summation order
//     in float meets: |error| <= (n - 1) * 2^-24 * sum |x_i| (to first order; x 1.01);
//   * emulated device only: v1 makes one atomicAdd per element, v2 and v3 exactly one per block (the
//     emulated device runs threads one at a time, so a plain += would pass there: it counts), v3
//     launches at most kLabMaxBlocks blocks and stays right with the grid capped at 2 blocks (its
//     grid-stride loop really strides).
// (b) bf16_encode_v1, v2, each: bitwise equal to kernels::float_to_bf16_bits (the production wire
//   encode) on the special values (zeros, subnormals, FLT_MAX, infinities, NaNs with payloads only in
//   the dropped bits, exact ties to even and odd, one ulp either side) followed by random bit
//   patterns, at n = 0, 1, 3, 4, 5, 255, 257, 1027, 100003, with the output poisoned twice (all bits 1,
//   then all 0: an element never written shows in one of them); emulated device: v2 at most
//   kLabMaxBlocks blocks and right with the grid capped at 2 blocks.
// The first failure prints the version, the case, what came back, what was expected and what the
// difference means (named mistakes: the tail never added or written, a race, truncation instead of
// rounding, ties away from zero, a NaN turned into an infinity, *out never set); exit 1.
// Then the timings (cudaEvent, per call, and the bandwidth the bytes read and written imply), and
// "PASS". On the emulated device the timings are the emulator's CPU time and say nothing about a GPU;
// the counts printed beside them (blocks, atomics) are what the versions differ in there.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/device.hpp"
#include "kernels/elementwise.hpp"
#include "labs/lab_gpu_kernels.hpp"

#if defined(MICRODDP_TEST_CUDA_EMU)
#include "cuda_emu/control.h"   // schedules and the grid cap (tests only)
#include "cuda_emu/counters.h"  // blocks and atomics per version
#endif

namespace {

namespace gpu = microddp::labs::gpu;
namespace kernels = microddp::kernels;

#if defined(MICRODDP_TEST_CUDA_EMU)
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

std::string fmt(const char* f, auto... args) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}

// A failure of the device or of a launch, with what the emulated device says about it.
struct DeviceFailure : std::exception {
  explicit DeviceFailure(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

void check_cuda(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return;
  std::string m = what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
#if defined(MICRODDP_TEST_CUDA_EMU)
  std::string fault(cudaEmuFaultMessage(nullptr, 0) + 1, '\0');
  fault.resize(cudaEmuFaultMessage(fault.data(), fault.size()));
  if (!fault.empty()) m += "; the emulated device says: " + fault;
#endif
  throw DeviceFailure(m);
}

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::int64_t n) : n_(n) {
    check_cuda(cudaMalloc(&p_, bytes() > 0 ? bytes() : 1), "cudaMalloc");
  }
  ~DeviceArray() { (void)cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  std::size_t bytes() const { return static_cast<std::size_t>(n_) * sizeof(T); }
  void upload(const std::vector<T>& h) const {
    if (n_ > 0) check_cuda(cudaMemcpy(p_, h.data(), bytes(), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the upload");
  }
  void fill_bytes(int value) const {
    check_cuda(cudaMemset(p_, value, bytes() > 0 ? bytes() : 1), "cudaMemset");
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after cudaMemset");
  }
  std::vector<T> download() const {
    std::vector<T> h(static_cast<std::size_t>(n_));
    check_cuda(cudaDeviceSynchronize(), "the kernel (cudaDeviceSynchronize)");
    if (n_ > 0) check_cuda(cudaMemcpy(h.data(), p_, bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
    return h;
  }

 private:
  T* p_ = nullptr;
  std::int64_t n_;
};

// Thread orders on the emulated device (no-ops on a GPU, which has its own).
void set_schedule(const char* spec) {
#if defined(MICRODDP_TEST_CUDA_EMU)
  if (cudaEmuSetSchedule(spec) != 0) throw DeviceFailure(std::string("bad schedule ") + spec);
#else
  (void)spec;
#endif
}
void set_grid_cap(unsigned cap) {
#if defined(MICRODDP_TEST_CUDA_EMU)
  cudaEmuSetGridCap(cap);
#else
  (void)cap;
#endif
}

// What one launch did on the emulated device.
struct Counts {
  std::uint64_t launches = 0, blocks = 0, atomics = 0;
};
void reset_counts() {
#if defined(MICRODDP_TEST_CUDA_EMU)
  cudaEmuResetCounters();
#endif
}
Counts read_counts() {
  Counts c;
#if defined(MICRODDP_TEST_CUDA_EMU)
  cudaEmuCounters e{};
  cudaEmuGetCounters(&e);
  c = Counts{e.kernel_launches, e.fiber_blocks + e.plain_blocks, e.atomic_operations};
#endif
  return c;
}

// ---- (a) sum ------------------------------------------------------------------------------------
using SumFn = void (*)(const float*, std::int64_t, float*, cudaStream_t);
struct SumVersion {
  const char* name;
  SumFn fn;
  bool one_atomic_per_block;
  bool grid_stride;
};
const SumVersion kSums[] = {{"sum_v1", gpu::sum_v1, false, false},
                            {"sum_v2", gpu::sum_v2, true, false},
                            {"sum_v3", gpu::sum_v3, true, true}};

float run_sum(const SumVersion& v, const DeviceArray<float>& x, std::int64_t n, const DeviceArray<float>& out) {
  out.fill_bytes(0xFF);  // NaN: a launcher that never sets *out returns it
  v.fn(x.get(), n, out.get(), nullptr);
  check_cuda(cudaGetLastError(), std::string(v.name) + "'s launch");
  return out.download()[0];
}

// 1..8, positive: prefix sums strictly increase, so a short sum names how many elements it has.
std::vector<float> small_integers(std::int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(1 + (i * 7919 + 3) % 8);
  return x;
}

std::string explain_sum(const std::vector<float>& x, std::int64_t n, float got) {
  if (std::isnan(got)) {
    return "NaN: the grader fills *out with NaN before each call; set it to 0 (cudaMemsetAsync on the "
           "stream) before the kernels add to it";
  }
  double prefix = 0;
  for (std::int64_t m = 0; m <= n; ++m) {
    if (prefix == static_cast<double>(got) && m < n) {
      return fmt("that is the sum of the first %lld elements only: the last %lld were never added (n %% %d = %lld: "
                 "launch enough blocks for every element, ceil(n / %d), and guard i < n)",
                 static_cast<long long>(m), static_cast<long long>(n - m), gpu::kLabThreads,
                 static_cast<long long>(n % gpu::kLabThreads), gpu::kLabThreads);
    }
    if (m < n) prefix += x[static_cast<std::size_t>(m)];
  }
  return "not the sum of any prefix either: some elements were added twice, or the wrong ones";
}

// The sum of x under several thread orders (the emulated device's schedules; on a GPU, repeated
// runs): "" when all agree, else what each gave. Integer inputs: every correct order agrees exactly.
std::string order_dependence(const SumVersion& v, const DeviceArray<float>& x, std::int64_t n,
                             const DeviceArray<float>& out) {
  const char* const orders[] = {"forward", "reverse", "shuffle:2", "shuffle:3"};
  std::vector<float> got;
  std::string seen;
  for (const char* order : orders) {
    set_schedule(order);
    got.push_back(run_sum(v, x, n, out));
    seen += fmt("%s%s %.9g", seen.empty() ? "" : ", ", kEmulated ? order : "run", static_cast<double>(got.back()));
  }
  set_schedule("shuffle:1");
  if (std::all_of(got.begin(), got.end(), [&](float g) { return g == got[0]; })) return "";
  return fmt("%s, n = %lld, integer inputs: the result depends on the order the threads run (%s): a race. A "
             "thread reads what other threads of its block wrote only after a barrier between them: a "
             "__syncthreads() missing between the tree's levels (or before the warps' sums are read)?",
             v.name, static_cast<long long>(n), seen.c_str());
}

std::string check_sum(const SumVersion& v) {
  static const std::int64_t kSizes[] = {0, 1, 31, 32, 33, 255, 256, 257, 1000, 4099, 65537, 200003};
  set_schedule("shuffle:1");
  for (const std::int64_t n : kSizes) {
    const std::vector<float> x = small_integers(n);
    double exact = 0;
    for (const float e : x) exact += e;
    DeviceArray<float> dx(n), out(1);
    dx.upload(x);
    reset_counts();
    const float got = run_sum(v, dx, n, out);
    const Counts c = read_counts();
    if (static_cast<double>(got) != exact) {
      if (std::string race = order_dependence(v, dx, n, out); !race.empty()) return race;
      return fmt("%s, n = %lld, integer inputs 1..8 (exact in any order): got %.9g, expected %.9g: %s", v.name,
                 static_cast<long long>(n), static_cast<double>(got), exact, explain_sum(x, n, got).c_str());
    }
    // The emulated device runs threads and blocks one at a time, so a plain `*out += ...` from many
    // of them gives the right sum there and loses updates on a GPU: it cannot show that race, it
    // counts the atomics instead.
    const std::uint64_t atomics_expected = v.one_atomic_per_block ? c.blocks : static_cast<std::uint64_t>(n);
    if (kEmulated && c.atomics != atomics_expected) {
      return fmt("%s, n = %lld: %llu atomicAdd calls in %llu blocks; expected %llu, %s. Fewer: a plain += on *out "
                 "from threads or blocks that run at the same time loses additions on a GPU (the emulated device "
                 "runs them one at a time and cannot show it, so the grader counts the atomics)",
                 v.name, static_cast<long long>(n), static_cast<unsigned long long>(c.atomics),
                 static_cast<unsigned long long>(c.blocks), static_cast<unsigned long long>(atomics_expected),
                 v.one_atomic_per_block ? "exactly one per block (thread 0 adds the block's sum)"
                                        : "one per element");
    }
    if (kEmulated && v.grid_stride && c.blocks > static_cast<std::uint64_t>(gpu::kLabMaxBlocks)) {
      return fmt("%s, n = %lld: launched %llu blocks; at most kLabMaxBlocks = %d (a grid-stride loop covers the rest)",
                 v.name, static_cast<long long>(n), static_cast<unsigned long long>(c.blocks), gpu::kLabMaxBlocks);
    }
  }
  // Right once is not enough: the same inputs under other thread orders.
  for (const std::int64_t n : {std::int64_t{257}, std::int64_t{4099}}) {
    DeviceArray<float> dx(n), out(1);
    dx.upload(small_integers(n));
    if (std::string race = order_dependence(v, dx, n, out); !race.empty()) return race;
  }
  // Random floats against float64, within the bound of any summation order.
  {
    const std::int64_t n = 1000;
    std::mt19937_64 rng(13);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<std::size_t>(n));
    double exact = 0, abs_sum = 0;
    for (float& e : x) {
      e = normal(rng);
      exact += e;
      abs_sum += std::fabs(e);
    }
    DeviceArray<float> dx(n), out(1);
    dx.upload(x);
    const float got = run_sum(v, dx, n, out);
    const double bound = 1.01 * static_cast<double>(n - 1) * std::ldexp(1.0, -24) * abs_sum;
    if (!(std::fabs(static_cast<double>(got) - exact) <= bound)) {
      return fmt("%s, n = %lld, random normal inputs: got %.9g, the float64 sum is %.9g; any order of float "
                 "additions stays within %.3g of it (are the elements summed as floats?)",
                 v.name, static_cast<long long>(n), static_cast<double>(got), exact, bound);
    }
  }
  if (kEmulated && v.grid_stride) {
    const std::int64_t n = 4099;
    const std::vector<float> x = small_integers(n);
    DeviceArray<float> dx(n), out(1);
    dx.upload(x);
    double exact = 0;
    for (const float e : x) exact += e;
    set_grid_cap(2);
    const float got = run_sum(v, dx, n, out);
    set_grid_cap(0);
    if (static_cast<double>(got) != exact) {
      return fmt("%s, n = %lld: with the grid capped at 2 blocks (CUDA_EMU_GRID_CAP) got %.9g: %s must loop over "
                 "the grid (i += gridDim.x * blockDim.x) so that any grid covers every element",
                 v.name, static_cast<long long>(n), static_cast<double>(got), v.name);
    }
  }
  return "";
}

// ---- (b) bf16 encode -----------------------------------------------------------------------------
using EncodeFn = void (*)(const float*, std::int64_t, std::uint16_t*, cudaStream_t);
struct EncodeVersion {
  const char* name;
  EncodeFn fn;
  bool grid_stride;
};
const EncodeVersion kEncodes[] = {{"bf16_encode_v1", gpu::bf16_encode_v1, false},
                                  {"bf16_encode_v2", gpu::bf16_encode_v2, true}};

float from_bits(std::uint32_t u) { return kernels::float_from_bits(u); }

// The special values first, then random bit patterns (every exponent, sign and payload).
std::vector<float> encode_inputs(std::int64_t n) {
  static const std::uint32_t kSpecial[] = {
      0x00000000u, 0x80000000u,               // +-0
      0x3f800000u, 0xbf800000u,               // +-1
      0x00000001u, 0x807fffffu, 0x00800000u,  // subnormals, the smallest normal
      0x7f7fffffu, 0xff7fffffu,               // +-FLT_MAX: round to +-inf
      0x7f800000u, 0xff800000u,               // +-inf
      0x7f800001u, 0xff80ffffu, 0x7fc00000u,  // NaNs: payload only in the dropped bits; quiet
      0x3f808000u, 0x3f818000u,               // exact ties: to even (down), to even (up)
      0xbf808000u, 0xbf818000u,               // the same, negative
      0x3f807fffu, 0x3f808001u,               // one ulp below / above a tie
      0x3f80ffffu, 0x7f7f8000u,               // carries into the next binade / to infinity
  };
  std::vector<float> x(static_cast<std::size_t>(n));
  std::mt19937 rng(1313);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    x[k] = from_bits(k < std::size(kSpecial) ? kSpecial[k] : static_cast<std::uint32_t>(rng()));
  }
  return x;
}

std::string explain_encode(float xf, std::uint16_t got, std::uint16_t want, bool never_written) {
  const std::uint32_t u = kernels::float_bits(xf);
  if (never_written) {
    return "the element was never written (the grader fills the output with all bits 1, then all 0, and it kept "
           "both): every element needs a thread; in a vectorised loop, the last n % 4 too";
  }
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  if (nan && (got & 0x7fffu) == 0x7f80u) {
    return "a NaN became an infinity: its payload lies in the 16 dropped bits; keep a NaN a NaN (set the quiet "
           "bit, 0x0040)";
  }
  if (!nan && got == static_cast<std::uint16_t>(u >> 16)) {
    return "that is x truncated (rounded toward zero): bf16 on the wire rounds to nearest, ties to even "
           "(add 0x7fff plus the lowest kept bit before dropping 16 bits)";
  }
  if (!nan && got == static_cast<std::uint16_t>((u + 0x8000u) >> 16)) {
    return "that is x rounded half away from zero: an exact tie goes to the EVEN neighbour";
  }
  return fmt("see kernels::float_to_bf16_bits (kernels/elementwise.hpp) for what the wire expects (0x%04x)",
             static_cast<unsigned>(want));
}

std::string check_encode(const EncodeVersion& v) {
  static const std::int64_t kSizes[] = {0, 1, 3, 4, 5, 255, 257, 1027, 100003};
  set_schedule("shuffle:1");
  for (const std::int64_t n : kSizes) {
    for (const unsigned cap : {0u, 2u}) {
      if (cap != 0 && (!kEmulated || !v.grid_stride)) continue;
      const std::vector<float> x = encode_inputs(n);
      DeviceArray<float> dx(n);
      DeviceArray<std::uint16_t> out(n);
      dx.upload(x);
      std::vector<std::uint16_t> got[2];
      Counts c;
      for (int pass = 0; pass < 2; ++pass) {
        out.fill_bytes(pass == 0 ? 0xFF : 0x00);
        set_grid_cap(cap);
        reset_counts();
        v.fn(dx.get(), n, out.get(), nullptr);
        check_cuda(cudaGetLastError(), std::string(v.name) + "'s launch");
        got[pass] = out.download();
        c = read_counts();
        set_grid_cap(0);
      }
      std::int64_t wrong = 0, first = -1;
      for (std::int64_t i = 0; i < n; ++i) {
        const std::size_t k = static_cast<std::size_t>(i);
        const std::uint16_t want = kernels::float_to_bf16_bits(x[k]);
        if (got[0][k] != want || got[1][k] != want) {
          if (first < 0) first = i;
          ++wrong;
        }
      }
      if (first >= 0) {
        const std::size_t k = static_cast<std::size_t>(first);
        const std::uint16_t want = kernels::float_to_bf16_bits(x[k]);
        const bool never = got[0][k] == 0xFFFFu && got[1][k] == 0x0000u;
        const std::uint16_t shown = got[0][k] != want ? got[0][k] : got[1][k];
        return fmt("%s, n = %lld%s: %lld of %lld elements wrong; the first, element %lld: x = %.9g (bits 0x%08x), got "
                   "0x%04x, expected 0x%04x: %s",
                   v.name, static_cast<long long>(n), cap != 0 ? ", grid capped at 2 blocks (CUDA_EMU_GRID_CAP)" : "",
                   static_cast<long long>(wrong), static_cast<long long>(n), static_cast<long long>(first),
                   static_cast<double>(x[k]), kernels::float_bits(x[k]), static_cast<unsigned>(shown),
                   static_cast<unsigned>(want), explain_encode(x[k], shown, want, never).c_str());
      }
      if (kEmulated && v.grid_stride && cap == 0 && c.blocks > static_cast<std::uint64_t>(gpu::kLabMaxBlocks)) {
        return fmt("%s, n = %lld: launched %llu blocks; at most kLabMaxBlocks = %d (a grid-stride loop covers the rest)",
                   v.name, static_cast<long long>(n), static_cast<unsigned long long>(c.blocks), gpu::kLabMaxBlocks);
      }
    }
  }
  return "";
}

// ---- timings ------------------------------------------------------------------------------------
// ms per call over `reps` calls after two warm-up calls, cudaEvent-timed on the default stream.
template <class F>
double time_ms(F&& call, int reps) {
  call();
  call();
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  check_cuda(cudaEventRecord(start, nullptr), "cudaEventRecord");
  for (int r = 0; r < reps; ++r) call();
  check_cuda(cudaEventRecord(stop, nullptr), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(stop), "the timed calls");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return static_cast<double>(ms) / reps;
}

void print_timings() {
  // A GPU: 2^24 elements (64 MiB of floats), enough to stream at memory bandwidth. Emulated: 2^18.
  const std::int64_t n = kEmulated ? (std::int64_t{1} << 18) : (std::int64_t{1} << 24);
  const int reps = kEmulated ? 2 : 20;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n));
  double exact = 0;
  for (float& e : x) {
    e = normal(rng);
    exact += e;
  }
  DeviceArray<float> dx(n), out(1);
  DeviceArray<std::uint16_t> wire(n);
  dx.upload(x);
  std::printf("#\n# timings, n = %lld elements, %d calls each after 2 warm-up calls%s\n", static_cast<long long>(n),
              reps,
              kEmulated ? "\n# EMULATED DEVICE: the times are the emulator's CPU time and say nothing about a GPU;"
                          "\n# the counts per call (blocks run, atomicAdd calls) are what differ here"
                        : "");
  std::printf("# %-16s %12s %12s %14s %14s %16s\n", "version", "time (ms)", "GB/s", "blocks/call", "atomics/call",
              "rel. error");
  auto row = [&](const char* name, double ms, double bytes, const Counts& c, int calls, double err) {
    const double per = 1.0 / calls;
    std::printf("  %-16s %12.4f %12s %14s %14s %16s\n", name, ms,
                kEmulated ? "-" : fmt("%.1f", bytes / (ms * 1e-3) / 1e9).c_str(),
                kEmulated ? fmt("%.0f", static_cast<double>(c.blocks) * per).c_str() : "-",
                kEmulated ? fmt("%.0f", static_cast<double>(c.atomics) * per).c_str() : "-",
                err >= 0 ? fmt("%.2e", err).c_str() : "bitwise");
  };
  set_schedule("shuffle:1");
  for (const SumVersion& v : kSums) {
    reset_counts();
    const double ms = time_ms([&] { v.fn(dx.get(), n, out.get(), nullptr); }, reps);
    const Counts c = read_counts();
    const double got = static_cast<double>(out.download()[0]);
    row(v.name, ms, 4.0 * static_cast<double>(n), c, reps + 2, std::fabs(got - exact) / std::fabs(exact));
  }
  for (const EncodeVersion& v : kEncodes) {
    reset_counts();
    const double ms = time_ms([&] { v.fn(dx.get(), n, wire.get(), nullptr); }, reps);
    const Counts c = read_counts();
    const std::vector<std::uint16_t> got = wire.download();
    for (std::int64_t i = 0; i < n; ++i) {
      if (got[static_cast<std::size_t>(i)] != kernels::float_to_bf16_bits(x[static_cast<std::size_t>(i)])) {
        throw DeviceFailure(fmt("%s: element %lld wrong in the timed run", v.name, static_cast<long long>(i)));
      }
    }
    row(v.name, ms, 6.0 * static_cast<double>(n), c, reps + 2, -1);
  }
  check_cuda(cudaGetLastError(), "the timed launches");
}

}  // namespace

int main() {
  try {
    if (kernels::cuda_device_count() == 0) {
      std::printf("no CUDA device: skipped\n");
      return 77;  // ctest: skipped
    }
    std::printf("# lab 13 (GPU kernels) grader on device 0: %s\n", kernels::cuda_device_description(0).c_str());
    for (const SumVersion& v : kSums) {
      const std::string failure = check_sum(v);
      if (!failure.empty()) {
        std::printf("FAIL: %s\n", failure.c_str());
        return 1;
      }
      std::printf("ok   %s: exact on integer inputs (n = 0 .. 200003), the same in every thread order, within "
                  "float's bound on random inputs\n",
                  v.name);
    }
    for (const EncodeVersion& v : kEncodes) {
      const std::string failure = check_encode(v);
      if (!failure.empty()) {
        std::printf("FAIL: %s\n", failure.c_str());
        return 1;
      }
      std::printf("ok   %s: bitwise kernels::float_to_bf16_bits on special values and random bits (n = 0 .. 100003)\n",
                  v.name);
    }
    print_timings();
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}
