// collective_reference.hpp — what every rank puts into each collective and what it must get back,
// as closed forms, and each collective's bus-bandwidth factor: one record per collective (like
// nccl-tests' per-collective files), shared by `microddp bench collectives` and the exactness tests
// (tests/comm/collective_checks.hpp), so inputs and expected values have one definition.
//
// Habits from nccl-tests: inputs are integers small enough to be exact in every dtype (|x| < 2^24,
// f32's exact-integer range, also for every partial sum a reduction order can form), so every
// correct result is exact and compared BITWISE with its closed form.
//
// Contract:
//   * CollectiveShape says which instance runs: this rank, the rank count n, the root, the count
//     (all_reduce/broadcast: the buffer; block collectives: the per-rank block c) and the op.
//   * record.init(shape, input) writes this rank's input into host memory of any dtype:
//       all_reduce (count), reduce_scatter (n*c)  reduce_input(rank, j, n)
//       broadcast (root: count), scatter (root: n*c), gather, all_gather (c)  data_value(rank, i, n)
//     reference_input(call, rank) is where that input goes for a CollectiveCall (types.hpp
//     conventions, in place included); it is empty where the rank contributes nothing.
//   * record.check(shape, result) compares this rank's result (reference_result(call, rank): where
//     the collective leaves it; empty on a gather's non-root) element by element, bitwise, with the
//     closed form and returns the number of wrong elements and the first one.
//   * record.bus_factor(n): nccl-tests' busbw = algbw · factor (all-reduce 2(n-1)/n; all-gather,
//     reduce-scatter, gather, scatter (n-1)/n; broadcast 1; docs/allreduce.md says why).
//   * Exact for n <= kMaxExactRanks ranks in f32, f64, i32 and i64; for the 16-bit floats (f16,
//     bf16: gradient compression's wire formats) up to kMaxExact16Ranks, with inputs of their own
//     (below): every partial sum any reduction order forms is an integer of magnitude <= 256, exact
//     in both formats, so a backend that accumulates in fp32 and rounds once per combination (ours,
//     kernels/elementwise.hpp wire16_reduce_pair) and one that adds in 16 bits (NCCL) both give
//     the closed form bit for bit.
#pragma once

#include <cstdint>

#include "comm/types.hpp"
#include "core/tensor_view.hpp"

namespace microddp::comm {

// Up to this many ranks every input, result and partial sum below is an integer of magnitude
// < 2^24: the reductions' largest sum is n(n-1)/2 + 7n beyond kTestRegimeRanks (< 2^24 for n <= 5786).
inline constexpr int kMaxExactRanks = 5786;
// Up to this many ranks (every rank count the test suite runs) the inputs are spread widely and
// reductions see negative values; beyond, they shrink so that large jobs stay exact.
inline constexpr int kTestRegimeRanks = 16;

// Payload of the data-movement collectives: element i of rank r's data. Distinct across ranks, and
// across positions within a period: up to 16 ranks r·10^6 + (i mod 999983) + 1 (a prime period, so a
// block landing at the wrong offset is seen for any realistic count); beyond, the stride shrinks to
// floor(2^24 / n) so the largest value, n·stride - 1, stays below 2^24.
inline std::int64_t data_stride(int n) { return n <= kTestRegimeRanks ? 1000000 : (std::int64_t{1} << 24) / n; }
inline std::int64_t data_period(int n) { return n <= kTestRegimeRanks ? 999983 : data_stride(n) - 1; }
inline std::int64_t data_value(int rank, std::int64_t i, int n) {
  return rank * data_stride(n) + i % data_period(n) + 1;
}

// Input of the reductions: element j of rank r is ((r + j) mod n)·scale + offset(j). Which rank
// holds the maximum rotates with j, so every rank contributes to max and min somewhere. Up to 16
// ranks: scale 1000, offset in [-2000, -1024] (signs exercised); beyond: scale 1, offset in [1, 7]
// (all positive, so every partial sum is at most the total).
inline std::int64_t reduce_scale(int n) { return n <= kTestRegimeRanks ? 1000 : 1; }
inline std::int64_t reduce_offset(std::int64_t j, int n) { return n <= kTestRegimeRanks ? j % 977 - 2000 : j % 7 + 1; }
inline std::int64_t reduce_input(int rank, std::int64_t j, int n) {
  return ((rank + j) % n) * reduce_scale(n) + reduce_offset(j, n);
}

// Closed form over ranks of reduce_input(., j, n): ((r + j) % n) runs over 0..n-1 once.
template <typename T>
T reduce_expected(ReduceOp op, int n, std::int64_t j) {
  const std::int64_t base = reduce_offset(j, n), scale = reduce_scale(n);
  const std::int64_t sum = scale * n * (n - 1) / 2 + n * base;
  switch (op) {
    case ReduceOp::Sum:
      return static_cast<T>(sum);
    case ReduceOp::Max:
      return static_cast<T>((n - 1) * scale + base);
    case ReduceOp::Min:
      return static_cast<T>(base);
    case ReduceOp::Mean:
      // Up to 6 ranks the sum is divisible by n (sum / n = 500 (n - 1) + base), and Mean is Sum
      // scaled by the rounded reciprocal fl(1/n), whose relative error is then <= 2^-25 (f32; 2^-54
      // for f64): less than half an ulp of any integer result, so the exact quotient is what a
      // correct backend returns. Beyond 6 ranks compare with the scaled sum computed the same way.
      if (n <= 6) return static_cast<T>(sum / n);
      return static_cast<T>(static_cast<T>(sum) * static_cast<T>(1.0 / n));
  }
  return T{};
}

// The 16-bit floats' inputs. Reductions: element j of rank r is ((r + j) mod n) + (j mod 5) - 8 up to
// kTestRegimeRanks ranks (|x| <= 11: sums of 16 stay within 256, bf16's exact-integer range; signs
// exercised), beyond ((r + j) mod n) mod 2 (sums <= n/2). Data movement: data_value's bits taken
// modulo kBits16Period (a prime below 0x7BFF, so every pattern is a finite non-negative number in
// both formats) and moved as they are.
inline constexpr int kMaxExact16Ranks = 512;
inline constexpr std::int64_t kBits16Period = 31741;
inline std::int64_t reduce_input16(int rank, std::int64_t j, int n) {
  return n <= kTestRegimeRanks ? (rank + j) % n + j % 5 - 8 : (rank + j) % n % 2;
}
// Closed form over ranks of reduce_input16(., j, n) (Mean is refused for 16-bit data).
inline std::int64_t reduce_expected16(ReduceOp op, int n, std::int64_t j) {
  if (n <= kTestRegimeRanks) {
    const std::int64_t base = j % 5 - 8;
    if (op == ReduceOp::Max) return n - 1 + base;
    if (op == ReduceOp::Min) return base;
    return std::int64_t{n} * (n - 1) / 2 + n * base;
  }
  if (op == ReduceOp::Max) return n > 1 ? 1 : 0;
  if (op == ReduceOp::Min) return 0;
  return n / 2;  // the odd numbers among 0 .. n-1
}
inline std::uint16_t data_bits16(std::int64_t value) { return static_cast<std::uint16_t>(value % kBits16Period); }

struct CollectiveShape {
  int rank = 0;
  int ranks = 1;
  int root = 0;
  std::int64_t count = 0;  // all_reduce/broadcast: the buffer; block collectives: the per-rank block c
  ReduceOp op = ReduceOp::Sum;
};

struct CheckResult {
  std::int64_t wrong = 0;       // elements that differ (bitwise) from the closed form
  std::int64_t first_bad = -1;  // index of the first one
  double first_got = 0, first_want = 0;
};

struct CollectiveRecord {
  CollectiveKind kind;
  void (*init)(const CollectiveShape& shape, core::TensorView input);
  CheckResult (*check)(const CollectiveShape& shape, core::TensorView result);
  double (*bus_factor)(int ranks);
};

const CollectiveRecord& collective_record(CollectiveKind kind);

// Where `call`'s input and result are on `rank` (types.hpp): see the contract above.
core::TensorView reference_input(const CollectiveCall& call, int rank);
core::TensorView reference_result(const CollectiveCall& call, int rank);

// Poison for outputs before a collective: as f32 0xA5A5A5A5 is about -2.9e-16, as f64 about -4e-30
// and as i32 -1515870811; none of them is a value any closed form above produces.
inline constexpr unsigned char kPoisonByte = 0xA5;
void poison(core::TensorView v);  // fills v's bytes with kPoisonByte (host memory)

}  // namespace microddp::comm
