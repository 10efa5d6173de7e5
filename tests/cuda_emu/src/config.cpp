// config.cpp — environment parsing for the emulator (see config.hpp).
#include "config.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

#include "counters.hpp"

namespace cuda_emu {

namespace {

// 16 GiB: a modest data-centre GPU, and far more than any test here allocates.
constexpr unsigned long long kDefaultDeviceMemoryMb = 16384;
// 64 KiB of stack per CUDA thread: kernels keep a few scalars and call libm; a block of 1024 threads
// then reserves 64 MiB of address space, of which only the touched pages (a few KiB each) are memory.
constexpr unsigned long long kDefaultFiberStackKb = 64;

[[noreturn]] void bad_setting(const char* name, const char* value, const char* expected) {
  std::fprintf(stderr, "cuda_emu: %s=\"%s\" is not valid: expected %s\n", name, value, expected);
  std::abort();
}

unsigned long long parse_number(const char* name, const char* value, unsigned long long min, unsigned long long max,
                                const char* expected) {
  if (value[0] < '0' || value[0] > '9') bad_setting(name, value, expected);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(value, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) bad_setting(name, value, expected);
  return v;
}

const char* env(const char* name) { return std::getenv(name); }

cudaError_t parse_fail_init(const char* value) {
  struct Known {
    const char* name;
    cudaError_t error;
  };
  // What a machine without a usable GPU stack reports from its first call.
  static constexpr Known kKnown[] = {
      {"insufficient-driver", cudaErrorInsufficientDriver},
      {"no-device", cudaErrorNoDevice},
      {"initialization-error", cudaErrorInitializationError},
      {"system-driver-mismatch", cudaErrorSystemDriverMismatch},
  };
  for (const Known& k : kKnown) {
    if (std::strcmp(value, k.name) == 0) return k.error;
  }
  bad_setting("CUDA_EMU_FAIL_INIT", value,
              "insufficient-driver, no-device, initialization-error or system-driver-mismatch");
}

Config read_config() {
  Config c;
  if (const char* v = env("CUDA_EMU_NODE_GPUS")) {
    // 64: more GPUs than any node has; the bound only keeps a typo from allocating huge tables.
    c.node_gpus = static_cast<int>(parse_number("CUDA_EMU_NODE_GPUS", v, 0, 64, "an integer in [0, 64]"));
  }
  c.visible = parse_visible_devices(env("CUDA_VISIBLE_DEVICES"), c.node_gpus);
  if (const char* v = env("CUDA_EMU_FAIL_INIT"); v != nullptr && v[0] != '\0') c.init_error = parse_fail_init(v);
  if (const char* v = env("CUDA_EMU_DRIVER_VERSION")) {
    // 100000 = CUDA 100.0: far above any real version; the bound only catches typos.
    c.driver_version =
        static_cast<int>(parse_number("CUDA_EMU_DRIVER_VERSION", v, 0, 100000, "an integer in [0, 100000]"));
  }
  unsigned long long mb = kDefaultDeviceMemoryMb;
  if (const char* v = env("CUDA_EMU_DEVICE_MEMORY_MB")) {
    // 2^30 MiB = 1 PiB: the size_t product below cannot overflow.
    mb = parse_number("CUDA_EMU_DEVICE_MEMORY_MB", v, 1, 1ull << 30, "an integer number of MiB >= 1");
  }
  c.device_memory_bytes = static_cast<std::size_t>(mb) << 20;
  if (const char* v = env("CUDA_EMU_PLAIN_KERNELS")) {
    c.plain_kernels = parse_number("CUDA_EMU_PLAIN_KERNELS", v, 0, 1, "0 or 1") == 1;
  }
#if defined(__x86_64__)
  c.context_switch = ContextSwitch::Assembly;
#else
  c.context_switch = ContextSwitch::Ucontext;
#endif
  if (const char* v = env("CUDA_EMU_CONTEXT_SWITCH")) {
    if (std::strcmp(v, "ucontext") == 0) {
      c.context_switch = ContextSwitch::Ucontext;
    } else if (std::strcmp(v, "asm") == 0) {
#if !defined(__x86_64__)
      bad_setting("CUDA_EMU_CONTEXT_SWITCH", v, "ucontext (the assembly switch is x86-64 only)");
#endif
      c.context_switch = ContextSwitch::Assembly;
    } else {
      bad_setting("CUDA_EMU_CONTEXT_SWITCH", v, "asm or ucontext");
    }
  }
  unsigned long long stack_kb = kDefaultFiberStackKb;
  if (const char* v = env("CUDA_EMU_FIBER_STACK_KB")) {
    // 16 KiB: below that glibc's expf/logf and our own frames may not fit; 64 MiB is absurdly large.
    stack_kb = parse_number("CUDA_EMU_FIBER_STACK_KB", v, 16, 65536, "an integer number of KiB in [16, 65536]");
  }
  c.fiber_stack_bytes = static_cast<std::size_t>(stack_kb) << 10;
  if (const char* v = env("CUDA_EMU_REPORT")) {
    if (parse_number("CUDA_EMU_REPORT", v, 0, 1, "0 or 1") == 1) std::atexit([] { counters::print_report(); });
  }
  if (const char* v = env("CUDA_EMU_GRID_CAP_EXCLUDE")) {
    const std::string list = v;
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t comma = std::min(list.find(',', start), list.size());
      if (comma > start) c.grid_cap_exclude.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
  }
  return c;
}

void read_tuning(Tuning& t) {
  if (const char* v = env("CUDA_EMU_SCHEDULE")) {
    if (!parse_schedule(v, t)) bad_setting("CUDA_EMU_SCHEDULE", v, "forward, reverse, shuffle or shuffle:SEED");
  }
  if (const char* v = env("CUDA_EMU_GRID_CAP")) {
    t.grid_cap = static_cast<unsigned>(
        parse_number("CUDA_EMU_GRID_CAP", v, 0, std::numeric_limits<int>::max(), "an integer >= 0 (0 = no cap)"));
  }
  if (const char* v = env("CUDA_EMU_STREAM_DELAY_US")) {
    // 10 s per operation would already make every test time out.
    t.stream_delay_us =
        static_cast<unsigned>(parse_number("CUDA_EMU_STREAM_DELAY_US", v, 0, 10'000'000, "microseconds in [0, 1e7]"));
  }
}

}  // namespace

bool parse_schedule(const std::string& spec, Tuning& t) {
  if (spec == "forward") {
    t.schedule = Schedule::Forward;
    return true;
  }
  if (spec == "reverse") {
    t.schedule = Schedule::Reverse;
    return true;
  }
  if (spec == "shuffle") {
    t.schedule = Schedule::Shuffle;
    t.seed = 0;
    return true;
  }
  const std::string prefix = "shuffle:";
  if (spec.compare(0, prefix.size(), prefix) != 0 || spec.size() == prefix.size()) return false;
  const std::string digits = spec.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) return false;
  errno = 0;
  const unsigned long long seed = std::strtoull(digits.c_str(), nullptr, 10);
  if (errno != 0) return false;
  t.schedule = Schedule::Shuffle;
  t.seed = seed;
  return true;
}

std::vector<int> parse_visible_devices(const char* env_value, int node_gpus) {
  std::vector<int> visible;
  if (env_value == nullptr) {
    for (int i = 0; i < node_gpus; ++i) visible.push_back(i);
    return visible;
  }
  const char* p = env_value;
  while (*p != '\0') {
    const char* end = std::strchr(p, ',');
    const std::string entry(p, end == nullptr ? std::strlen(p) : static_cast<std::size_t>(end - p));
    const bool digits = !entry.empty() && entry.size() <= 9 &&
                        std::all_of(entry.begin(), entry.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (!digits) break;
    const int index = std::atoi(entry.c_str());
    if (index >= node_gpus || std::find(visible.begin(), visible.end(), index) != visible.end()) break;
    visible.push_back(index);
    if (end == nullptr) break;
    p = end + 1;
  }
  return visible;
}

std::string kernel_base_name(const std::string& name) { return name.substr(0, name.find('<')); }

const Config& config() {
  static const Config c = read_config();
  return c;
}

Tuning& tuning() {
  static Tuning t;
  static std::once_flag once;
  std::call_once(once, [] { read_tuning(t); });
  return t;
}

}  // namespace cuda_emu
