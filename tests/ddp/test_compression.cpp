// test_compression.cpp — gradient compression (ddp/compression) against independent references.
//
//   * PowerSGD with rank >= the rank of the summed gradient reproduces the uncompressed sum (float64
//     reference) within fp32 tolerance, for every strategy (naive, flat, overlap, bucketed), and
//     biases (sent uncompressed) exactly.
//   * Error feedback: with the same full-rank gradient every step and rank 1, the error buffer stays
//     bounded over 1000 steps and the mean of what was applied converges to the true sum; without
//     error feedback it does not (the contrast shows the test can fail).
//   * Training with compression: all ranks hold bitwise identical parameters after every step
//     (divergence check), for every strategy, with and without error feedback.
//
// Arguments: --backend=NAME (default mpi).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "core/rng.hpp"
#include "ddp/compression/powersgd_compressor.hpp"
#include "ddp/grad_sync.hpp"
#include "ddp/trainer.hpp"
#include "kernels/ops.hpp"
#include "support/mpi_test_env.hpp"
#include "support/test_args.hpp"

namespace microddp::ddp {
namespace {

// Three parameters in gradient-ready order, 256-byte aligned as model::param_layout lays them out:
// a (rows, cols) weight, its bias, and a second weight.
std::vector<model::ParamInfo> test_params(std::int64_t rows, std::int64_t cols) {
  std::vector<model::ParamInfo> p(3);
  auto align = [](std::int64_t n) {
    return (n + model::kParamAlignFloats - 1) / model::kParamAlignFloats * model::kParamAlignFloats;
  };
  p[0] = {"w1", 0, 1, false, 0, rows * cols, rows, cols};
  p[1] = {"b1", 1, 1, true, align(rows * cols), rows, rows, 1};
  p[2] = {"w0", 2, 0, false, p[1].offset + align(rows), cols * rows, cols, rows};
  return p;
}
std::int64_t total_count(const std::vector<model::ParamInfo>& p) { return p.back().offset + p.back().count; }

// Rank r's gradient: per matrix the rank-1 outer product u_r v_r^T (so the sum over n ranks has
// rank <= n), bias entries arbitrary; pure functions of (rank, element).
void fill_low_rank(const std::vector<model::ParamInfo>& params, int rank, float* g) {
  for (const auto& p : params) {
    for (std::int64_t i = 0; i < p.rows; ++i) {
      for (std::int64_t j = 0; j < p.cols; ++j) {
        const float u =
            core::normal01(7, 100 + static_cast<std::uint64_t>(rank * 10 + p.index), static_cast<std::uint64_t>(i));
        const float v =
            core::normal01(7, 200 + static_cast<std::uint64_t>(rank * 10 + p.index), static_cast<std::uint64_t>(j));
        g[p.offset + i * p.cols + j] = p.is_bias ? u : u * v;
      }
    }
  }
}

GradSyncOptions small_buckets() {
  GradSyncOptions o;
  o.bucket_mb = 8000.0 / (1 << 20);  // ~8 kB: the weights land in different buckets
  return o;
}

class PowerSgdStrategy : public ::testing::TestWithParam<const char*> {};

TEST_P(PowerSgdStrategy, RankAtLeastMatrixRankReproducesTheSum) {
  auto comm = comm::make_communicator(testing::backend_arg(), testing::runtime());
  const int n = comm->size();
  auto ops = kernels::make_cpu_ops(1);
  const auto params = test_params(40, 24);
  const std::int64_t total = total_count(params);
  std::vector<float> grads(static_cast<std::size_t>(total), 0.0f);
  core::EventLog events;
  events.reserve(1000);
  GradCompressionConfig cc;
  cc.mode = CompressionMode::PowerSgd;
  cc.powersgd_rank = 4;  // >= n (the sum's rank) for n <= 4
  cc.error_feedback = false;
  ASSERT_LE(n, cc.powersgd_rank);
  auto sync = make_grad_sync(parse_strategy(GetParam()), *comm, params, core::TensorView::of(grads.data(), total),
                             events, small_buckets(), cc, *ops, 3);
  auto* psgd = dynamic_cast<PowerSgdCompressor*>(sync->compressor());
  ASSERT_NE(psgd, nullptr);
  EXPECT_EQ(psgd->compressed_matrices(), 2);
  // Reference: the float64 sum of every rank's gradient.
  std::vector<double> ref(static_cast<std::size_t>(total), 0.0);
  std::vector<float> tmp(static_cast<std::size_t>(total), 0.0f);
  for (int r = 0; r < n; ++r) {
    fill_low_rank(params, r, tmp.data());
    for (std::int64_t i = 0; i < total; ++i) ref[static_cast<std::size_t>(i)] += tmp[static_cast<std::size_t>(i)];
  }
  for (int step = 0; step < 3; ++step) {  // warm-started Q must keep working
    std::fill(grads.begin(), grads.end(), 0.0f);
    fill_low_rank(params, comm->rank(), grads.data());
    sync->on_backward_begin(step);
    for (const auto& p : params) sync->on_grad_ready(p);
    sync->finish();
    for (const auto& p : params) {
      double max_ref = 0.0, max_err = 0.0;
      for (std::int64_t i = p.offset; i < p.offset + p.count; ++i) {
        max_ref = std::max(max_ref, std::abs(ref[static_cast<std::size_t>(i)]));
        max_err = std::max(max_err, std::abs(grads[static_cast<std::size_t>(i)] - ref[static_cast<std::size_t>(i)]));
      }
      // fp32: P = MQ, Q = M^T P and P Q^T each add relative rounding ~ k * 6e-8 with k <= 40 terms;
      // 1e-5 of the largest element leaves a wide margin while any lost direction (O(1)) fails.
      EXPECT_LE(max_err, 1e-5 * max_ref) << p.name << " step " << step << " on " << n << " ranks";
    }
    // Bytes: P (40x4 + 24x4) and Q (24x4 + 40x4) for the two weights, plus the bias, in fp32.
    EXPECT_EQ(sync->bytes_per_step(), (2 * (40 * 4 + 24 * 4) + 40) * 4);
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, PowerSgdStrategy, ::testing::Values("naive", "flat", "overlap", "bucketed"));

// The same full-rank gradient every step: with error feedback, what is applied converges to it.
double mean_applied_error(bool error_feedback, double* max_error_norm_ratio) {
  auto comm = comm::make_communicator(testing::backend_arg(), testing::runtime());
  auto ops = kernels::make_cpu_ops(1);
  const auto params = test_params(12, 10);
  const std::int64_t total = total_count(params);
  std::vector<float> grads(static_cast<std::size_t>(total), 0.0f), g0(static_cast<std::size_t>(total), 0.0f);
  for (const auto& p : params) {
    for (std::int64_t i = 0; i < p.count; ++i) {
      g0[static_cast<std::size_t>(p.offset + i)] =
          core::normal01(9, static_cast<std::uint64_t>(p.index), static_cast<std::uint64_t>(i));
    }
  }
  core::EventLog events;
  events.reserve(100);
  GradCompressionConfig cc;
  cc.mode = CompressionMode::PowerSgd;
  cc.powersgd_rank = 1;
  cc.error_feedback = error_feedback;
  auto sync =
      make_grad_sync(Strategy::Flat, *comm, params, core::TensorView::of(grads.data(), total), events, {}, cc, *ops, 3);
  const double n = comm->size();
  double g_norm = 0.0;
  for (float x : g0) g_norm += static_cast<double>(x) * x;
  g_norm = std::sqrt(g_norm);
  std::vector<double> applied(static_cast<std::size_t>(total), 0.0);
  constexpr int kSteps = 1000;
  *max_error_norm_ratio = 0.0;
  for (int step = 0; step < kSteps; ++step) {
    grads = g0;
    events.clear();
    sync->on_backward_begin(step);
    for (const auto& p : params) sync->on_grad_ready(p);
    sync->finish();
    for (std::size_t i = 0; i < grads.size(); ++i) applied[i] += grads[i];
    if (error_feedback) {
      sync->compressor()->state_to_host();
      for (const auto& s : sync->compressor()->state()) {
        if (s.name != "error_feedback") continue;
        double e = 0.0;
        for (std::int64_t i = 0; i < s.count; ++i) e += static_cast<double>(s.data[i]) * s.data[i];
        *max_error_norm_ratio = std::max(*max_error_norm_ratio, std::sqrt(e) / g_norm);
      }
    }
  }
  // Relative error of the mean applied gradient against the true sum n * g0.
  double err = 0.0;
  for (std::size_t i = 0; i < applied.size(); ++i) {
    const double d = applied[i] / kSteps - n * g0[i];
    err += d * d;
  }
  return std::sqrt(err) / (n * g_norm);
}

TEST(ErrorFeedback, ErrorStaysBoundedAndTheMeanConverges) {
  double ratio_on = 0.0, ratio_off = 0.0;
  const double with = mean_applied_error(true, &ratio_on);
  const double without = mean_applied_error(false, &ratio_off);
  // Bounded: the error never exceeds a few gradient norms (it would grow ~linearly if not).
  EXPECT_LT(ratio_on, 10.0);
  // Sum of applied = kSteps * n * g - (E_1000 summed over ranks), so the mean's error is
  // <= n * |E| / (1000 n |g|) < 10 / 1000 by the bound above.
  EXPECT_LT(with, 0.01);
  // Without feedback, rank 1 of a full-rank 12x10 matrix loses most of it every step.
  EXPECT_GT(without, 0.1);
}

// Training: every mode x strategy keeps all ranks bitwise identical with compression on.
TEST(CompressedTraining, RanksStayBitwiseIdentical) {
  auto comm = comm::make_communicator(testing::backend_arg(), testing::runtime());
  for (const CompressionMode mode : {CompressionMode::PowerSgd, CompressionMode::Bf16, CompressionMode::Fp16}) {
    for (const char* strategy : {"naive", "flat", "overlap", "bucketed"}) {
      for (bool ef : {true, false}) {
        SCOPED_TRACE(std::string(compression_mode_name(mode)) + " " + strategy + (ef ? " with" : " without") +
                     " error feedback");
        TrainConfig c;
        c.model = model::MlpConfig{8, 16, 3, 3};
        c.global_batch = 13;
        c.steps = 6;
        c.seed = 4;
        c.strategy = parse_strategy(strategy);
        c.sync_options.bucket_mb = 600.0 / (1 << 20);
        c.compression.mode = mode;
        c.compression.powersgd_rank = 1;
        c.compression.powersgd_start_step = 2;
        c.compression.error_feedback = ef;
        c.check_every = 1;  // the divergence check after every step throws if any rank differs
        auto ops = kernels::make_cpu_ops(1);
        Trainer t(c, *comm, *ops);
        t.setup();
        double first = 0.0, last = 0.0;
        for (int s = 0; s < c.steps; ++s) {
          const StepRecord r = t.step();
          if (s == 0) first = r.loss;
          last = r.loss;
          ASSERT_TRUE(std::isfinite(r.loss)) << strategy;
        }
        EXPECT_LT(last, first);
        EXPECT_EQ(t.checks_done(), c.steps);
        const std::int64_t fp32 = t.sync().uncompressed_bytes_per_step();
        if (mode == CompressionMode::PowerSgd) {
          EXPECT_LT(t.sync().bytes_per_step(), fp32);
        } else {
          EXPECT_EQ(2 * t.sync().bytes_per_step(), fp32);  // exactly half: 16 of 32 bits per value
        }
      }
    }
  }
}

// 16-bit modes against the float64 sum: within the wire format's precision (one encode per rank,
// at most n - 1 roundings of partial sums: (n + n - 1) u sum|g| with u = 2^-11 / 2^-8), the same
// bits on every rank, and fp16 overflow as +inf (refused by the trainer's numerics, never clipped).
TEST(Wire16Compression, MatchesTheSumWithinItsPrecision) {
  auto comm = comm::make_communicator(testing::backend_arg(), testing::runtime());
  const int n = comm->size();
  auto ops = kernels::make_cpu_ops(1);
  const auto params = test_params(40, 24);
  const std::int64_t total = total_count(params);
  for (const CompressionMode mode : {CompressionMode::Fp16, CompressionMode::Bf16}) {
    for (const char* strategy : {"naive", "flat", "overlap", "bucketed"}) {
      SCOPED_TRACE(std::string(compression_mode_name(mode)) + " " + strategy);
      std::vector<float> grads(static_cast<std::size_t>(total), 0.0f);
      core::EventLog events;
      events.reserve(1000);
      GradCompressionConfig cc;
      cc.mode = mode;
      auto sync = make_grad_sync(parse_strategy(strategy), *comm, params, core::TensorView::of(grads.data(), total),
                                 events, small_buckets(), cc, *ops, 3);
      fill_low_rank(params, comm->rank(), grads.data());
      // 40960 = 5 * 2^13: exact in both formats (3 significant bits); two of them overflow fp16.
      if (comm->rank() <= 1) grads[5] = 40960.0f;
      sync->on_backward_begin(0);
      for (const auto& p : params) sync->on_grad_ready(p);
      sync->finish();
      const double u = mode == CompressionMode::Fp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
      std::vector<double> exact(static_cast<std::size_t>(total), 0.0), abs_sum(exact);
      std::vector<float> tmp(static_cast<std::size_t>(total), 0.0f);
      for (int r = 0; r < n; ++r) {
        fill_low_rank(params, r, tmp.data());
        for (std::size_t i = 0; i < tmp.size(); ++i) {
          exact[i] += tmp[i];
          abs_sum[i] += std::abs(static_cast<double>(tmp[i]));
        }
      }
      for (std::size_t i = 0; i < tmp.size(); ++i) {
        if (i == 5) continue;
        // fp16 subnormals (below 6.1e-5) have an absolute spacing of 2^-24: add it per rounding.
        const double bound = (2 * n - 1) * (u * abs_sum[i] + std::ldexp(1.0, -25)) * (1.0 + 1e-3);
        ASSERT_LE(std::abs(grads[i] - exact[i]), bound) << "element " << i;
      }
      const float big = grads[5];
      if (mode == CompressionMode::Fp16 && n > 1) {
        EXPECT_TRUE(std::isinf(big) && big > 0) << big;
      } else {
        EXPECT_EQ(big, 40960.0f * (n > 1 ? 2 : 1));  // exact: 40960 and 81920 have 3 significant bits
      }
    }
  }
}

}  // namespace
}  // namespace microddp::ddp
