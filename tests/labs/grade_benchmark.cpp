// grade_benchmark.cpp — the grader of lab 12 (benchmark an all-reduce: measure_all_reduce;
// docs/labs/12-benchmark).
//
// Part 1, deterministic: the student's function gets a fake LabBenchComm whose clock is driven by the
// grader. Its all-reduce "takes" a time the grader chose (a whole number of ticks of 2^-30 s, so every
// clock sum and difference is exact in double), different on every rank and in every call: the
// warm-up calls are 40-100x slow (cold caches, connection set-up), one rank is 50% slower in each
// repetition (which rank rotates), and one repetition on the last rank is 25x slow (descheduled).
// The barrier and the maximum over ranks take time too (so timing them shows); the ranks' clocks start
// at different origins. max_over_ranks is a real MPI_Allreduce(MAX) over the grader's ranks. So the
// grader knows the exact answer on every rank: time_s = the median over repetitions of the slowest
// rank's time per all-reduce, algbw = bytes / time_s in GB/s, busbw = algbw · 2(n-1)/n. Compared to
// 1e-12 relative (the same operations give the same bits; another association order of
// bytes / time / 1e9 moves an ulp or two). It also checks the calls: the size asked for, warmup +
// reps·batch all-reduces, a barrier before every timed batch. When a value is wrong, the grader
// computes the usual wrong answers (this rank's own time, the fastest rank, the mean over ranks, the
// max of per-rank medians, the mean over repetitions, the warm-up timed, the barrier timed, the batch
// not divided, busbw without its factor ...) and names the one the student's value equals.
// Part 2, the seam: the function through `microddp lab-bench`'s code (labs/lab_bench.hpp) on the real
// ring backend, three small sizes: results exact, the calls counted, every rank's time the same,
// algbw and busbw consistent with it. Nothing about real timings is asserted beyond time > 0.
// Exit 0 and "PASS" when everything holds on every rank.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "grader_support.hpp"
#include "labs/lab_api.hpp"
#include "labs/lab_bench.hpp"

namespace {

namespace labs = microddp::labs;
using labs::LabBenchResult;
using labs::LabBenchSettings;

// One tick of the fake clock: 2^-30 s (about 0.93 ns). Clock readings stay below 2^43 ticks, so every
// reading, sum and difference is exact in double.
constexpr double kTick = 1.0 / (1 << 30);
// Exact values compared after one division and a median: the same bits; bytes/time·1e-9 against
// bytes/time/1e9: an ulp or two. 1e-12 admits any sound order and no wrong formula.
constexpr double kTol = 1e-12;
constexpr std::int64_t kMaxTicks = 4096;  // what one max_over_ranks "takes"

std::string fmt(const char* f, auto... args) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}
double rel(double got, double want) { return want == 0 ? std::abs(got) : std::abs(got - want) / std::abs(want); }

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser: fixed, the same on every run
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
std::uint64_t hash(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
  return mix(a ^ mix(b ^ mix(c ^ mix(d))));
}

struct Case {
  std::int64_t bytes;
  LabBenchSettings s;
  std::uint64_t seed;
};

// The times the fake's collectives take, in ticks: a function of (case, rank, call), so every rank
// can compute every other rank's.
struct Timing {
  const Case& c;
  int n;
  // α ≈ 7.6 µs and ≈ 4.3 GB/s, this machine's order of magnitude.
  std::int64_t base() const { return 8192 + c.bytes / 4; }
  std::int64_t all_reduce(int rank, std::int64_t k) const {
    const std::uint64_t u = hash(c.seed, static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(k), 1);
    if (k < c.s.warmup) return base() * static_cast<std::int64_t>(40 + u % 61);  // cold: 40-100x
    const std::int64_t rep = (k - c.s.warmup) / c.s.batch;
    std::int64_t t = base() * static_cast<std::int64_t>(1000 + u % 700) / 1000;  // jitter up to +70%
    if (rep % n == rank) t += base() / 2;                                        // this rep's slow rank
    if (rep == 1 && rank == n - 1) t *= 25;                                      // descheduled once
    return t;
  }
  // The barrier a rank enters after k all-reduces: waiting for the others.
  std::int64_t barrier(int rank, std::int64_t k) const {
    return 3000 + static_cast<std::int64_t>(
                      hash(c.seed, static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(k), 2) % 20000);
  }
  // Rank r's time per all-reduce in timed batch i (what a correct function measures), in seconds.
  double batch_s(int rank, int i) const {
    std::int64_t sum = 0;
    for (int j = 0; j < c.s.batch; ++j) sum += all_reduce(rank, c.s.warmup + std::int64_t{i} * c.s.batch + j);
    return static_cast<double>(sum) * kTick / c.s.batch;
  }
};

// The fake. Its clock moves only in its own calls, by the ticks above.
class FakeBenchComm final : public labs::LabBenchComm {
 public:
  FakeBenchComm(const Case& c, int rank, int size)
      : c_(c), t_{c, size}, rank_(rank), size_(size), clock_((3600 + 37 * std::int64_t{rank}) << 30) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  double now_s() override { return static_cast<double>(clock_) * kTick; }
  void barrier() override {
    clock_ += t_.barrier(rank_, calls_);
    barrier_pending_ = true;
  }
  void all_reduce(std::int64_t bytes) override {
    if (bytes != c_.bytes && wrong_bytes_ < 0) wrong_bytes_ = bytes;
    const std::int64_t k = calls_++;
    if (k >= c_.s.warmup && (k - c_.s.warmup) % c_.s.batch == 0 && !barrier_pending_ && unbarriered_ < 0)
      unbarriered_ = k;
    barrier_pending_ = false;
    clock_ += t_.all_reduce(rank_, k);
  }
  void max_over_ranks(std::span<double> values) override {
    MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    clock_ += kMaxTicks;
  }

  std::int64_t calls_ = 0, wrong_bytes_ = -1, unbarriered_ = -1;

 private:
  const Case& c_;
  Timing t_;
  int rank_, size_;
  std::int64_t clock_;
  bool barrier_pending_ = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// What the right answer and the usual wrong ones come to for one case on one rank.
struct Answers {
  double time_s = 0;
  std::vector<std::pair<double, std::string>> wrong_times;  // (value, what it is)
  std::string table;                                        // per repetition and rank, µs
};

Answers answers(const Case& c, int rank, int n) {
  const Timing t{c, n};
  const int reps = c.s.reps;
  std::vector<std::vector<double>> per(static_cast<std::size_t>(n));  // per[r][i]: rank r's time in rep i
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < reps; ++i) per[static_cast<std::size_t>(r)].push_back(t.batch_s(r, i));
  auto over_ranks = [&](auto f) {
    std::vector<double> v;
    for (int i = 0; i < reps; ++i) {
      std::vector<double> col;
      for (int r = 0; r < n; ++r) col.push_back(per[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)]);
      v.push_back(f(col));
    }
    return v;
  };
  const auto maxes =
      over_ranks([](const std::vector<double>& col) { return *std::max_element(col.begin(), col.end()); });
  Answers a;
  a.time_s = median(maxes);
  auto& w = a.wrong_times;
  const auto& own = per[static_cast<std::size_t>(rank)];
  w.push_back({median(own),
               "this rank's own time (the median of its repetitions) with no max over ranks: an all-reduce is done "
               "when its slowest rank is done, so each repetition counts as long as its slowest rank took "
               "(max_over_ranks on the times, then the median)"});
  w.push_back(
      {median(over_ranks([](const std::vector<double>& col) { return *std::min_element(col.begin(), col.end()); })),
       "the FASTEST rank's time in each repetition (a min over ranks): the collective took as long as its "
       "slowest rank, take the max"});
  w.push_back({median(over_ranks([](const std::vector<double>& col) { return mean(col); })),
               "the mean over ranks (nccl-tests' default -a 1): this lab, like bench collectives and analyze, "
               "reports the slowest rank, the time the whole collective took"});
  double max_of_medians = 0;
  for (const auto& p : per) max_of_medians = std::max(max_of_medians, median(p));
  w.push_back({max_of_medians,
               "the max over ranks of each rank's median (what bench collectives prints: one exchange per size). "
               "The lab asks for the median of the per-repetition maxima, never smaller: a repetition is as slow "
               "as its slowest rank, whichever rank that was"});
  w.push_back({mean(maxes),
               "the MEAN over repetitions of the slowest rank's time: the one descheduled repetition (25x) pulls a "
               "mean, not a median"});
  if (reps % 2 == 0) {
    auto sorted = maxes;
    std::sort(sorted.begin(), sorted.end());
    w.push_back({sorted[static_cast<std::size_t>(reps / 2)],
                 "the upper of the two middle values: for an even count the median is their mean"});
    w.push_back({sorted[static_cast<std::size_t>(reps / 2 - 1)],
                 "the lower of the two middle values: for an even count the median is their mean"});
  }
  {  // each warm-up all-reduce timed as a repetition of its own, kept in the sample
    auto v = maxes;
    for (int k = 0; k < c.s.warmup; ++k) {
      std::int64_t m = 0;
      for (int r = 0; r < n; ++r) m = std::max(m, t.all_reduce(r, k));
      v.push_back(static_cast<double>(m) * kTick);
    }
    if (c.s.warmup > 0)
      w.push_back({median(v),
                   "a median over a sample that holds the warm-up iterations: they are 40-100x slow here (as first "
                   "calls are: connections, page faults, cold caches); run them before the timed batches, untimed"});
  }
  w.push_back({median(over_ranks([&](const std::vector<double>& col) {
                 return *std::max_element(col.begin(), col.end()) * c.s.batch;
               })),
               "the time of a whole batch: divide it by settings.batch (the time of ONE all-reduce)"});
  {  // the barrier inside the clock readings
    std::vector<double> v;
    for (int i = 0; i < reps; ++i) {
      double m = 0;
      for (int r = 0; r < n; ++r) {
        const std::int64_t k = c.s.warmup + std::int64_t{i} * c.s.batch;
        m = std::max(m, per[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] +
                            static_cast<double>(t.barrier(r, k)) * kTick / c.s.batch);
      }
      v.push_back(m);
    }
    w.push_back({median(v), "a time with the barrier inside the clock readings: read the clock after comm.barrier()"});
  }
  std::string& tab = a.table;
  tab = "\n      per repetition, us (rank 0 .. n-1 | max):";
  for (int i = 0; i < std::min(reps, 8); ++i) {
    tab += fmt("\n        rep %d:", i);
    for (int r = 0; r < n; ++r)
      tab += fmt(" %9.3f", per[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] * 1e6);
    tab += fmt(" | %9.3f", maxes[static_cast<std::size_t>(i)] * 1e6);
  }
  if (reps > 8) tab += fmt("\n        ... (%d repetitions in all)", reps);
  return a;
}

std::string describe(const Case& c, int rank, int n) {
  return fmt("measure_all_reduce(%lld bytes, warmup %d, reps %d, batch %d) on rank %d of %d",
             static_cast<long long>(c.bytes), c.s.warmup, c.s.reps, c.s.batch, rank, n);
}

// This rank's failure in one case, or "".
std::string grade_case(const Case& c, int rank, int n) {
  FakeBenchComm fake(c, rank, n);
  const LabBenchResult got = labs::measure_all_reduce(fake, c.bytes, c.s);
  const std::string what = describe(c, rank, n);
  if (fake.wrong_bytes_ >= 0)
    return fmt("%s: comm.all_reduce(%lld): measure the size asked for, %lld bytes", what.c_str(),
               static_cast<long long>(fake.wrong_bytes_), static_cast<long long>(c.bytes));
  const std::int64_t want_calls = c.s.warmup + std::int64_t{c.s.reps} * c.s.batch;
  if (fake.calls_ != want_calls) {
    std::string hint = "warmup untimed all-reduces, then reps batches of batch all-reduces";
    if (fake.calls_ == std::int64_t{c.s.warmup + c.s.reps} * c.s.batch)
      hint = "you ran the warm-up as batches: settings.warmup counts all-reduces";
    else if (fake.calls_ == std::int64_t{c.s.reps} * c.s.batch)
      hint =
          "no warm-up: the first calls pay for connections, page faults and cold caches; run settings.warmup "
          "all-reduces first, untimed";
    return fmt("%s: %lld all-reduces, expected warmup + reps x batch = %lld. Hint: %s", what.c_str(),
               static_cast<long long>(fake.calls_), static_cast<long long>(want_calls), hint.c_str());
  }
  if (fake.unbarriered_ >= 0)
    return fmt(
        "%s: the timed batch that starts with all-reduce call %lld (counting from 0) has no comm.barrier() "
        "before it. Hint: without it the ranks start each batch at different moments, and a rank that "
        "arrives early times its wait for the late ones",
        what.c_str(), static_cast<long long>(fake.unbarriered_));

  const Answers a = answers(c, rank, n);
  if (!(rel(got.time_s, a.time_s) <= kTol)) {
    std::string hint = "the median over repetitions of the max over ranks of (batch time / batch)";
    for (const auto& [value, name] : a.wrong_times) {
      if (rel(got.time_s, value) <= kTol && rel(value, a.time_s) > kTol) {
        hint = "your time is " + name;
        break;
      }
    }
    return fmt("%s: time_s expected %.6f us, got %.6f us. Hint: %s%s", what.c_str(), a.time_s * 1e6, got.time_s * 1e6,
               hint.c_str(), a.table.c_str());
  }
  const double bytes = static_cast<double>(c.bytes);
  const double algbw = bytes / a.time_s * 1e-9, busbw = algbw * 2.0 * (n - 1) / n;
  if (!(rel(got.algbw_gbs, algbw) <= kTol)) {
    std::string hint = "bytes / time_s, in GB/s (1e9 bytes per second)";
    if (algbw > 0 && rel(got.algbw_gbs, bytes / a.time_s / (1 << 30)) <= kTol)
      hint = "that is GiB/s (2^30 bytes); nccl-tests and bench collectives print GB/s, 1e9 bytes per second";
    else if (algbw > 0 && rel(got.algbw_gbs, bytes / a.time_s) <= kTol)
      hint = "that is bytes per second; the row is in GB/s (1e9 bytes per second)";
    else if (algbw > 0 && rel(got.algbw_gbs, busbw) <= kTol)
      hint = "that is the bus bandwidth; algbw is bytes / time, nothing else";
    return fmt("%s: algbw_gbs expected %.9g GB/s (%lld bytes / %.6f us), got %.9g. Hint: %s", what.c_str(), algbw,
               static_cast<long long>(c.bytes), a.time_s * 1e6, got.algbw_gbs, hint.c_str());
  }
  if (!(rel(got.busbw_gbs, busbw) <= kTol)) {
    std::string hint =
        "algbw x 2(n-1)/n: the bytes each rank must send and receive with any all-reduce algorithm, "
        "over the time (docs/allreduce.md)";
    if (rel(got.busbw_gbs, algbw) <= kTol)
      hint =
          "busbw equals algbw: the 2(n-1)/n factor is missing (each rank sends and receives 2(n-1)/n of the "
          "buffer; on one rank nothing travels, busbw 0)";
    else if (rel(got.busbw_gbs, algbw * (n - 1) / n) <= kTol)
      hint = "(n-1)/n is the factor of a reduce-scatter or an all-gather; an all-reduce is both: 2(n-1)/n";
    return fmt("%s: busbw_gbs expected %.9g GB/s (algbw %.9g x 2(n-1)/n = %.6g), got %.9g. Hint: %s", what.c_str(),
               busbw, algbw, 2.0 * (n - 1) / n, got.busbw_gbs, hint.c_str());
  }
  return "";
}

// Part 2: through the program's seam on the ring backend.
std::string grade_seam(const microddp::comm::MpiRuntime& mpi) {
  const auto comm = microddp::comm::make_communicator("ring", mpi);
  const LabBenchSettings s{1, 3, 2};
  const std::vector<std::int64_t> sizes = {4, 4096, 65536};
  const auto rows = labs::run_lab_bench(*comm, mpi, sizes, s);
  const int n = mpi.size();
  for (const auto& r : rows) {
    const std::string what =
        fmt("in the program (microddp lab-bench --backend ring), %lld bytes, warmup 1, reps 3, "
            "batch 2",
            static_cast<long long>(r.bytes));
    if (r.wrong != 0)
      return fmt(
          "%s: the last all-reduce left %lld wrong elements: every all-reduce must complete before your "
          "function returns",
          what.c_str(), static_cast<long long>(r.wrong));
    if (r.calls != 7)
      return fmt("%s: %lld all-reduces, expected 1 + 3 x 2 = 7", what.c_str(), static_cast<long long>(r.calls));
    if (r.barriers < 3)
      return fmt("%s: %lld barriers, expected one before each of the 3 batches", what.c_str(),
                 static_cast<long long>(r.barriers));
    if (!r.ranks_agree) return what + ": the ranks returned different times (the max over ranks is missing?)";
    const double algbw = static_cast<double>(r.bytes) / r.result.time_s * 1e-9;
    if (!(r.result.time_s > 0) || rel(r.result.algbw_gbs, algbw) > 1e-9 ||
        rel(r.result.busbw_gbs, algbw * 2.0 * (n - 1) / n) > 1e-9)
      return fmt(
          "%s: time %.9g s, algbw %.9g, busbw %.9g GB/s do not agree (algbw = bytes / time, busbw = "
          "algbw x 2(n-1)/n)",
          what.c_str(), r.result.time_s, r.result.algbw_gbs, r.result.busbw_gbs);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace microddp::labs::grading;
  return run_grader(argc, argv, [](const microddp::comm::MpiRuntime& mpi) {
    const int rank = mpi.rank(), n = mpi.size();
    say_grading("12 (benchmark an all-reduce)", n,
                " (a hang here: max_over_ranks called a different number of "
                "times on some rank)");
    // Odd and even repetition counts, batches, no warm-up, 0 bytes (algbw 0), a large size.
    const std::vector<Case> cases = {
        {4096, {3, 7, 1}, 11},
        {1 << 20, {5, 8, 1}, 12},
        {64, {2, 5, 4}, 13},
        {0, {0, 1, 2}, 14},
        {std::int64_t{256} << 20, {1, 3, 1}, 15},
        {100, {4, 12, 3}, 16},
    };
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const std::string failure = guarded([&] { return grade_case(cases[i], rank, n); });
      if (any_failed(failure, false, fmt("part 1 (fake clock), case %zu", i + 1).c_str())) return false;
    }
    if (any_failed(guarded([&] { return grade_seam(mpi); }), false, "part 2 (the program's seam)")) return false;
    root_says("PASS: lab 12, %zu cases exact on the fake clock on every rank, and the seam on the ring backend\n",
              cases.size());
    return true;
  });
}
