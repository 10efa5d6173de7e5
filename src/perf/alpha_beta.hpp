// alpha_beta.hpp — the α-β(-γ) cost model of collectives, and its least-squares fit: pure math on
// numbers (the model file is comm_model_io.hpp, benchmark output bench_rows.hpp).
//
// A message of S bytes between two ranks costs α + S·β (α: latency in s, β: inverse bandwidth in
// s/byte); reducing S bytes locally costs S·γ. Every algorithm's time is then a linear function of
// (α, β, γ) with coefficients that depend only on the rank count n and the payload S:
//     T(n, S) = A(n)·α + B(n, S)·β + C(n, S)·γ
// (derivations: docs/performance.md "The model"). Because the coefficients are known, α and β are
// fitted by (weighted) linear least squares over a size sweep from `microddp bench collectives`.
// B and C are proportional for every all-reduce algorithm here (both ∝ S with the same n factor up
// to a constant), so γ cannot be separated from β by timing all-reduces alone: the fit takes γ as
// a given (default 0) and the fitted β is then an *effective* inverse bandwidth that includes the
// reduction pass. For a ring that is exact at other rank counts too (B and C both scale with
// (n-1)/n); predictions over a user-given link (`analyze --link-gbps`) add a measured γ instead.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace microddp::perf {

// The collectives' algorithms we model.
enum class Algorithm {
  Ring,               // reduce-scatter + all-gather around a ring (bandwidth-optimal)
  RecursiveDoubling,  // log2(n) rounds of whole-buffer exchange (latency-optimal)
  Rabenseifner,       // recursive halving + recursive doubling (ring's bandwidth, 2·log2(n) latencies)
  DoubleBinaryTree,   // two binary trees, half the buffer each, pipelined (2·log2(n) latencies per segment)
  Naive,              // everything through rank 0, one rank after the other (O(n) baseline)
  Auto,               // what the `auto` backend runs: its description says which, per size
};

std::string_view algorithm_name(Algorithm a);
Algorithm parse_algorithm(std::string_view name);  // throws core::UsageError on unknown names
// The algorithm the model uses for a communication backend's all-reduce, from the backend's own
// description (comm/factory.hpp; "NAME+dsync" is NAME). A library's own choice ("mpi", "nccl") is
// modelled as a ring: its large-message algorithm is ring-based, and the fit absorbs the rest; so
// is a name that is no backend (another tool's rows).
Algorithm algorithm_for_backend(std::string_view backend);
// The concrete algorithm (never Auto) modelled for an all-reduce of `bytes` over `ranks` ranks: Auto
// is resolved by the `auto` backend's description with the default CommConfig, i.e. where the
// backend switches (comm::kDefaultAutoRdMaxBytes), so the model and the backend cannot disagree.
Algorithm resolve_algorithm(Algorithm algo, int ranks, double bytes);

// Collectives whose costs are modelled (names as in the bench output).
enum class Collective { AllReduce, ReduceScatter, AllGather, Broadcast };
std::string_view collective_name(Collective c);
bool parse_collective(std::string_view name, Collective& out);  // accepts all_reduce/allreduce/...

struct Coefficients {
  double a = 0, b = 0, c = 0;  // T = a·α + b·β + c·γ
};

Coefficients cost_coefficients(Collective coll, Algorithm algo, int ranks, double bytes);

struct AlphaBeta {
  double alpha_s = 0;           // latency per message (s)
  double beta_s_per_byte = 0;   // inverse bandwidth (s/byte); "effective" when gamma is 0
  double gamma_s_per_byte = 0;  // local reduction (s/byte), not fitted (see header)
  // Burst credit (s, >= 0; SizeRegime): taken off the bandwidth term once per collective, whatever
  // the rank count (a token bucket is per link, not per message), never below zero (nothing to send,
  // one rank: nothing to take off).
  double credit_s = 0;
  double time_s(const Coefficients& k) const {
    const double wire = k.b * beta_s_per_byte - credit_s;
    return k.a * alpha_s + (wire > 0 ? wire : 0.0) + k.c * gamma_s_per_byte;
  }
  // Link parameters as users quote them: Gbit/s and µs.
  static AlphaBeta from_link(double gbps, double latency_us, double gamma_s_per_byte = 0);
};

// One measured point of a collective sweep.
struct Sample {
  int ranks = 0;
  double bytes = 0;
  double seconds = 0;
};

// α and β change with the message size: an MPI library switches protocol and algorithm (eager /
// rendezvous, recursive doubling / ring), and a buffer that fits in the caches moves faster than
// one streamed from DRAM (this machine: 16 MiB all-reduces at 0.28 ns/B, 64 MiB at 0.49 ns/B).
// One line over 4 B .. 64 MiB misses both ends, so a fit may hold size regimes, each its own line.
//
// A regime after the first may hold a burst credit: its line, extended down to 0 bytes, would cross
// zero. That is what a link with burst credit looks like. A token bucket (`tc tbf`, a switch's
// buffer, a NIC's rate limiter) passes the first B bytes after an idle moment at full speed and the
// rest at the sustained rate r, so an isolated transfer of S > B bytes takes about (S - B)/r: slope
// 1/r, intercept -B/r. Clamping that intercept to 0 (as the first regime must be, and the one-line
// fit is) forces the slope to split the difference between the sizes the burst covers and the sizes
// it does not, and the model then misses both. The credit is a time per collective (credit_s, with
// α = 0 in that regime), not a negative α: α is paid per message, and a ring of n ranks sends
// 2(n-1) of them, but a link's bucket is spent once however many messages cross it; a negative α
// fitted at 2 ranks would grow the credit 3x at 4. A cache or protocol cliff has the same shape, and there
// every collective gets the credit; on a shaped link it is spent by the first collective of a busy
// period and one that follows another without a gap gets none (ModelEntry::streamed_time_s, the step
// model's back-to-back collectives, step_model.hpp). The data cannot tell the two apart: `analyze
// --burst-credit every|idle` says which (perf/analysis.hpp).
// What reports print under a fit with burst credit.
inline constexpr std::string_view kBurstCreditNote =
    "burst credit: the size regime's line falls to zero below its sizes (a cliff: a cache, a protocol switch, "
    "or a shaped link's token bucket)";

struct SizeRegime {
  double from_bytes = 0;  // covers [from_bytes, the next regime's from_bytes); the first starts at 0
  AlphaBeta model;
  bool has_burst_credit() const { return model.credit_s > 0; }
};

struct FitResult {
  AlphaBeta model;                  // one line over all sizes (what the table reports as α, β)
  std::vector<SizeRegime> regimes;  // empty: `model` everywhere; else what predictions use
  int samples = 0;
  // Quality of what predictions use (the regimes when there are any):
  double r2 = 0;                     // coefficient of determination of T (unweighted, on the data)
  double rms_rel_residual = 0;       // sqrt(mean(((pred - meas)/meas)^2))
  double max_rel_residual = 0;       // max |pred - meas| / meas
  double line_rms_rel_residual = 0;  // the same for the one line `model` (shows what regimes gain)
  const AlphaBeta& model_for(double bytes) const;
  bool has_burst_credit() const;  // a regime with credit_s > 0 (SizeRegime)
};

// Least squares for (α, β) with γ fixed. Residuals are weighted by 1/T (relative error), because
// a sweep spans 4 B to hundreds of MiB and unweighted least squares would fit only the largest
// sizes. α and β are constrained to be >= 0 (a negative fit is clamped to 0 and the other
// parameter refitted). Throws core::Error with fewer than 2 usable samples.
// allow_burst_credit: where the line's intercept comes out negative (a size regime above the smallest
// sizes, SizeRegime), fit T = B·β - credit instead (α = 0, credit >= 0), as long as it predicts a
// positive time for every sample it was fitted to.
FitResult fit_alpha_beta(Collective coll, Algorithm algo, const std::vector<Sample>& samples,
                         double gamma_s_per_byte = 0, bool allow_burst_credit = false);

// The line above, and then up to max_regimes contiguous size ranges with a line each, every range
// holding >= 3 distinct sizes. The number of regimes is chosen by the Bayesian information
// criterion on the relative residuals (n·ln(RSS/n) + p·ln(n), p = 3 per regime - 1): a regime is
// added only when it explains the data better by more than its extra parameters would by chance.
// Boundaries lie at the geometric mean of the neighbouring measured sizes. Regimes after the first
// may carry a burst credit (SizeRegime); the first and the one line may not.
FitResult fit_alpha_beta_regimes(Collective coll, Algorithm algo, const std::vector<Sample>& samples,
                                 double gamma_s_per_byte = 0, int max_regimes = 3);

// A fitted model per (backend, collective); comm_model_io.hpp reads and writes it as a file.
struct ModelEntry {
  std::string backend;
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  FitResult fit;
  std::vector<int> ranks;                     // rank counts the fit saw
  double time_s(int n, double bytes) const {  // this entry's algorithm, the regime of `bytes`
    return fit.model_for(bytes).time_s(cost_coefficients(collective, algorithm, n, bytes));
  }
  // A collective of `bytes` that follows `before` bytes of collectives without a gap on a shaped
  // link (SizeRegime): a busy period streams through the token bucket as one long transfer, so this
  // one costs what it adds to that transfer, T(before + bytes) - T(before) (>= 0).
  double streamed_time_s(int n, double bytes, double before) const {
    const double t = time_s(n, before + bytes) - (before > 0 ? time_s(n, before) : 0.0);
    return t > 0 ? t : 0.0;
  }
};

struct CommModel {
  std::vector<ModelEntry> entries;
  std::string source;  // where the data came from (file or "in-process sweep")
  // Entry for (backend, all_reduce) or nullptr.
  const ModelEntry* find(std::string_view backend, Collective coll = Collective::AllReduce) const;
  double time_s(std::string_view backend, Collective coll, int ranks, double bytes) const;  // throws if absent
};

}  // namespace microddp::perf
