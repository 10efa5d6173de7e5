// bench_compute_command.cpp — `microddp bench compute`: how close the CPU step is to the hardware.
//
// Side by side in one run (house style: compare variants in one run, quote medians and ratios):
//   sgemm only     exactly the GEMMs of one forward+backward (same shapes, transposes and
//                  accumulation flags) called back to back on the compute backend: the ceiling
//   fwd+bwd        the model's real forward + softmax-xent + backward (GEMMs + element-wise ops)
//   optimizer      one fused Adam pass over the flat buffers, in GB/s (28 bytes per parameter:
//                  read p, g, m, v; write p, m, v) against memcpy moving the same number of bytes
//   16-bit wire    the gradient compression's conversions over the gradient (--grad-compression
//                  fp16/bf16; with error feedback, the residual written in the same pass), fp16 both
//                  ways: the scalar code and F16C (kernels/cpu/f16_arrays.hpp), in values per ns
//   synthetic data one batch of the synthetic data set (batch x width features and their labels):
//                  data::SyntheticDataset::fill (kernels/cpu/synthetic_rows.cpp, vectorised) against
//                  the fill it replaced, kept here as the baseline: core::normal01 (glibc logf/cosf)
//                  one element at a time, then each label's dot products one after another
// The target is fwd+bwd >= 85% of sgemm-only GFLOP/s.
// --precision bf16 (as train's) times bf16-operand GEMMs and the bf16 model; on the CPU that is the
// decoding reference, slower than sgemm by design (it proves numerics, not speed).
// --device cuda (the rank's GPU, as `train --device cuda` picks it; --tf32 as there) times the first
// three rows on the GPU (device buffers, one synchronisation per iteration; "memcpy" becomes a
// device-to-device copy of the same bytes): the GEMM floor of a GPU step, which jobs/gpu_bench.sh
// divides by for its model-FLOP utilisation. The wire and data rows are CPU code and stay on the CPU.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/cli_values.hpp"
#include "app/command.hpp"
#include "app/compute_device.hpp"
#include "core/error.hpp"
#include "core/host_buffer.hpp"
#include "core/precision.hpp"
#include "core/rng.hpp"
#include "core/timer.hpp"
#include "data/synthetic_dataset.hpp"
#include "kernels/cpu/f16_arrays.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"
#include "model/mlp.hpp"
#include "model/optimizer.hpp"
#include "perf/median.hpp"

namespace microddp::app {

namespace {

using perf::median;

class BenchComputeCommand final : public Command {
 public:
  explicit BenchComputeCommand(CLI::App* sub) {
    sub->add_option("--width", width_, "Hidden width")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16))
        ->capture_default_str();
    sub->add_option("--depth", depth_, "Hidden layers")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}))
        ->capture_default_str();
    sub->add_option("--batch", batch_, "Rows per step (per rank)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
        ->capture_default_str();
    sub->add_option("--classes", classes_, "Output classes")
        ->check(CLI::Range(std::int64_t{2}, std::int64_t{1} << 16))
        ->capture_default_str();
    sub->add_option("--threads", threads_, "BLAS threads (0 = as train: the environment's or this rank's CPUs / ranks)")
        ->check(CLI::Range(0, 1024))
        ->capture_default_str();
    sub->add_option("--iters", iters_, "Timed iterations")->check(CLI::Range(1, 100000))->capture_default_str();
    sub->add_option("--warmup", warmup_, "Untimed iterations first")
        ->check(CLI::Range(0, 100000))
        ->capture_default_str();
    sub->add_option("--device", device_, "cpu, or cuda: the GEMM, fwd+bwd and optimizer rows on this rank's GPU")
        ->check(CLI::IsMember({"cpu", "cuda"}))
        ->capture_default_str();
    precision_option_ = sub->add_option("--precision", precision_,
                    "GEMM arithmetic, as train --precision: fp32, tf32 (--device cuda only), bf16 (the GEMM floor "
                    "then times bf16-operand GEMMs: cublasGemmEx on a GPU, the decoding reference on the CPU)")
        ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
        ->capture_default_str();
    sub->add_flag("--tf32", tf32_, "Same as --precision tf32 (--device cuda)");
  }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  void print_main_rows(const kernels::Ops& ops, const comm::MpiRuntime& mpi, int threads, double gemm_ms,
                       double model_ms, double opt_ms, double copy_ms, double flops, double bytes) const;
  std::int64_t width_ = 1024, depth_ = 16, batch_ = 256, classes_ = 2;
  int threads_ = 1, iters_ = 10, warmup_ = 2;
  std::string device_ = "cpu";
  bool tf32_ = false;
  std::string precision_ = "fp32";
  CLI::Option* precision_option_ = nullptr;
  core::Precision precision() const { return precision_from_options(precision_, precision_option_, tf32_); }
};

// The rows every device prints: the GEMM floor, the model's forward+backward, Adam against a copy.
void BenchComputeCommand::print_main_rows(const kernels::Ops& ops, const comm::MpiRuntime& mpi, int threads,
                                          double gemm_ms, double model_ms, double opt_ms, double copy_ms,
                                          double flops, double bytes) const {
  const bool on_gpu = ops.device() != core::Device::Host;
  std::printf("# microddp bench compute: width %" PRId64 ", depth %" PRId64 ", batch %" PRId64 ", classes %" PRId64
              ", %s, %d rank(s)\n",
              width_, depth_, batch_, classes_,
              on_gpu ? "device cuda" : (std::to_string(threads) + " BLAS thread(s)").c_str(), mpi.size());
  std::printf("# %s; precision %s\n", ops.description().c_str(), std::string(core::precision_name(precision())).c_str());
  std::printf("# medians of 3 interleaved rounds x %d iterations (after %d warm-up)\n", iters_, warmup_);
  std::printf("# %-16s %12s %14s %10s\n", "variant", "time_ms", "rate", "ratio");
  // bf16: the same GEMMs with bf16 operands (gemm_bf16), not sgemm; one word before "only" either way.
  std::printf("  %-16s %12.3f %9.1f GF/s %10s\n", precision() == core::Precision::Bf16 ? "gemm-bf16 only" : "sgemm only",
              gemm_ms, flops / (gemm_ms * 1e6), "1.000");
  std::printf("  %-16s %12.3f %9.1f GF/s %10.3f\n", "fwd+bwd", model_ms, flops / (model_ms * 1e6), gemm_ms / model_ms);
  std::printf("  %-16s %12.3f %9.2f GB/s %10s\n", on_gpu ? "d2d copy 28B/par" : "memcpy 28B/param", copy_ms,
              bytes / (copy_ms * 1e6), "1.000");
  std::printf("  %-16s %12.3f %9.2f GB/s %10.3f\n", "adam (fused)", opt_ms, bytes / (opt_ms * 1e6), copy_ms / opt_ms);
  std::printf("# fwd+bwd reaches %.1f%% of the GEMM-only row's throughput (target >= 85%%): %s\n", 100.0 * gemm_ms / model_ms,
              gemm_ms / model_ms >= 0.85 ? "OK" : "BELOW TARGET");
}

int BenchComputeCommand::run(const comm::MpiRuntime& mpi) {
  const int threads = blas_threads(threads_, mpi, comm_settings()).threads;
  const core::Precision prec = precision();
  const bool bf16 = prec == core::Precision::Bf16;
  // The device as train picks it (app/compute_device.hpp); "mpi" only to pass its backend check.
  std::unique_ptr<kernels::Ops> ops =
      choose_compute(device_, "mpi", false, prec == core::Precision::Tf32, threads, mpi).ops;
  const bool on_gpu = ops->device() != core::Device::Host;
  model::MlpConfig mc{width_, width_, depth_, classes_};
  model::FullMLP net(mc, batch_, *ops, prec);
  net.init(1);
  model::OptimizerConfig oc;
  auto adam = model::make_optimizer(oc, net.flat_count(), *ops);
  core::HostBuffer<float> host_input(batch_ * width_);
  core::HostBuffer<std::int32_t> host_labels(batch_);
  for (std::int64_t i = 0; i < batch_ * width_; ++i)
    host_input[i] = core::normal01(7, 0, static_cast<std::uint64_t>(i));
  for (std::int64_t i = 0; i < batch_; ++i) host_labels[i] = static_cast<std::int32_t>(i % classes_);
  ops->copy_from_host(net.input(), host_input.data(), static_cast<std::size_t>(host_input.count()) * sizeof(float));
  kernels::OpsBuffer<std::int32_t> labels(*ops, batch_);
  labels.from_host(host_labels.data(), 0, batch_);

  // Separate operands for the sgemm-only sequence (same shapes as the model's calls), on the device.
  const std::int64_t maxf = std::max(width_, classes_);
  kernels::OpsBuffer<float> act(*ops, batch_ * maxf), out(*ops, batch_ * maxf), w(*ops, maxf * maxf),
      dw(*ops, maxf * maxf);
  {
    std::vector<float> h(static_cast<std::size_t>(std::max(act.count(), w.count())));
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = 0.01f * static_cast<float>(i % 97);
    act.from_host(h.data(), 0, act.count());
    out.from_host(h.data(), 0, out.count());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = 0.001f * static_cast<float>(i % 89);
    w.from_host(h.data(), 0, w.count());
    dw.from_host(h.data(), 0, dw.count());
  }
  // bf16: the same GEMMs with bf16 operands (the model's forward/backward GEMMs read bf16 copies).
  kernels::OpsBuffer<std::uint16_t> act16(*ops, bf16 ? act.count() : 0), out16(*ops, bf16 ? out.count() : 0),
      w16(*ops, bf16 ? w.count() : 0);
  if (bf16) {
    ops->encode_wire16(kernels::Wire16::BF16, act.data(), act16.data(), nullptr, act.count());
    ops->encode_wire16(kernels::Wire16::BF16, out.data(), out16.data(), nullptr, out.count());
    ops->encode_wire16(kernels::Wire16::BF16, w.data(), w16.data(), nullptr, w.count());
    ops->reserve_bf16_gemm(std::max(act.count(), w.count()));
  }
  // The CPU GEMM as OpenBLAS threads it (one sgemm, its own split; bits depend on the thread count)
  // beside the default fixed tiles (kernels/cpu/tiled_gemm.hpp): the cost of thread-count
  // independence, on the same operands in the same run. fp32 on the CPU only.
  const bool compare_gemm = !on_gpu && !bf16;
  std::unique_ptr<kernels::Ops> openblas_ops =
      compare_gemm ? kernels::make_cpu_ops(threads, kernels::CpuGemm::OpenBlasThreads) : nullptr;
  kernels::Ops* gemm_ops = ops.get();
  auto gemm = [&](bool ta, bool tb, std::int64_t m_, std::int64_t n_, std::int64_t k_, const float* a,
                  const std::uint16_t* a16, const float* b, const std::uint16_t* b16, float beta, float* c) {
    if (bf16) {
      gemm_ops->gemm_bf16(ta, tb, m_, n_, k_, 1.0f, a16, b16, beta, c);
    } else {
      gemm_ops->gemm(ta, tb, m_, n_, k_, 1.0f, a, b, beta, c);
    }
  };
  auto gemm_sequence = [&] {
    for (std::int64_t layer = 0; layer <= depth_; ++layer) {  // forward
      const std::int64_t o = layer == depth_ ? classes_ : width_;
      gemm(false, true, batch_, o, width_, act.data(), act16.data(), w.data(), w16.data(), 0.0f, out.data());
    }
    for (std::int64_t layer = depth_; layer >= 0; --layer) {  // backward: dW, then dX (not for layer 0)
      const std::int64_t o = layer == depth_ ? classes_ : width_;
      gemm(true, false, o, width_, batch_, out.data(), out16.data(), act.data(), act16.data(), 1.0f, dw.data());
      // dX goes to a scratch output (in bf16 the operand copies stay fixed; in fp32 as before).
      if (layer > 0)
        gemm(false, false, batch_, width_, o, out.data(), out16.data(), w.data(), w16.data(), 0.0f,
             bf16 ? out.data() : act.data());
    }
    ops->synchronize();
  };
  auto model_step = [&] {
    net.forward(net.input(), batch_);  // as the trainer does: the first backward overwrites gradients
    net.backward(labels.data(), 1.0f / static_cast<float>(batch_), nullptr, nullptr, /*accumulate=*/false);
    ops->synchronize();
  };
  const std::int64_t n = net.flat_count();
  // A copy of 14n bytes = 28n bytes of traffic: memcpy on the CPU, a device copy of 3.5n floats on a GPU.
  core::HostBuffer<char> src(on_gpu ? 0 : n * 14), dst(on_gpu ? 0 : n * 14);
  kernels::OpsBuffer<float> dsrc(*ops, on_gpu ? (n * 7 + 1) / 2 : 0), ddst(*ops, on_gpu ? (n * 7 + 1) / 2 : 0);
  auto optimizer_step = [&] {
    adam->step(net.param_data(), net.grad_data());
    ops->synchronize();
  };
  auto copy_step = [&] {
    if (on_gpu) {
      ops->copy(ddst.data(), dsrc.data(), dsrc.count());
      ops->synchronize();
    } else {
      std::memcpy(dst.data(), src.data(), static_cast<std::size_t>(src.count()));
    }
  };

  auto time_ms = [&](auto&& fn) {
    for (int i = 0; i < warmup_; ++i) fn();
    std::vector<double> t;
    for (int i = 0; i < iters_; ++i) {
      core::Stopwatch sw;
      fn();
      t.push_back(sw.elapsed_ms());
    }
    return median(t);
  };
  // Interleave the variants so drift on the shared machine hits all of them alike.
  std::vector<double> g, m, o, c, gob;
  for (int rep = 0; rep < 3; ++rep) {
    g.push_back(time_ms(gemm_sequence));
    if (compare_gemm) {
      gemm_ops = openblas_ops.get();
      gob.push_back(time_ms(gemm_sequence));
      gemm_ops = ops.get();
    }
    m.push_back(time_ms(model_step));
    o.push_back(time_ms(optimizer_step));
    c.push_back(time_ms(copy_step));
  }
  const double gemm_ms = median(g), model_ms = median(m), opt_ms = median(o), copy_ms = median(c);

  const double flops = net.flops_per_step(batch_);
  const double bytes = 28.0 * static_cast<double>(n);
  if (on_gpu) {
    if (mpi.rank() == 0) print_main_rows(*ops, mpi, threads, gemm_ms, model_ms, opt_ms, copy_ms, flops, bytes);
    return 0;
  }
  // 16-bit wire conversions over one gradient, side by side (interleaved like the rows above).
  core::HostBuffer<std::uint16_t> h16(n), h16b(n);
  core::HostBuffer<float> residual(n), decoded(n);
  const float* grad = net.grad_data();
  const bool simd = kernels::f16_simd_supported();
  struct WireRow {
    const char* name;
    std::function<void()> fn;
    std::vector<double> ms;
  };
  std::vector<WireRow> wire = {
      {"bf16 encode+ef", [&] { ops->encode_wire16(kernels::Wire16::BF16, grad, h16.data(), residual.data(), n); }, {}},
      {"fp16 encode+ef scalar", [&] { kernels::f16_encode_array_scalar(grad, h16.data(), residual.data(), n); }, {}},
      {"fp16 decode scalar", [&] { kernels::f16_decode_array_scalar(h16.data(), decoded.data(), n); }, {}},
      {"fp16 sum scalar", [&] { kernels::f16_sum_array_scalar(h16b.data(), h16.data(), h16.data(), n); }, {}}};
  if (simd) {
    wire.push_back(
        {"fp16 encode+ef f16c", [&] { kernels::f16_encode_array_simd(grad, h16.data(), residual.data(), n); }, {}});
    wire.push_back({"fp16 decode f16c", [&] { kernels::f16_decode_array_simd(h16.data(), decoded.data(), n); }, {}});
    wire.push_back({"fp16 sum f16c", [&] { kernels::f16_sum_array_simd(h16b.data(), h16.data(), h16.data(), n); }, {}});
  }
  for (int rep = 0; rep < 3; ++rep) {
    for (WireRow& r : wire) r.ms.push_back(time_ms(r.fn));
  }
  // Synthetic data: one batch of rows, the vectorised maker against the per-element fill it replaced.
  data::SyntheticDataset synthetic(1, width_, classes_);
  const kernels::SyntheticSpec spec = synthetic.spec();
  core::HostBuffer<float> rows(batch_ * width_);
  core::HostBuffer<std::int32_t> row_labels(batch_);
  auto libm_fill = [&] {  // the fill of data::SyntheticDataset before the portable maker (per element)
    for (std::int64_t s = 0; s < batch_; ++s) {
      float* row = rows.data() + s * width_;
      for (std::int64_t j = 0; j < width_; ++j) {
        row[j] = core::normal01(spec.seed, spec.stream, static_cast<std::uint64_t>(s * width_ + j));
      }
      std::int32_t best = 0;
      float best_score = 0.0f;
      for (std::int64_t k = 0; k < classes_; ++k) {
        float score = 0.0f;
        for (std::int64_t j = 0; j < width_; ++j) score += spec.teacher[k * width_ + j] * row[j];
        if (k == 0 || score > best_score) {
          best_score = score;
          best = static_cast<std::int32_t>(k);
        }
      }
      row_labels[s] = best;
    }
  };
  auto portable_fill = [&] { synthetic.fill(0, batch_, rows.data(), row_labels.data()); };
  std::vector<double> data_before, data_after;
  for (int rep = 0; rep < 3; ++rep) {
    data_before.push_back(time_ms(libm_fill));
    data_after.push_back(time_ms(portable_fill));
  }
  if (mpi.rank() == 0) {
    print_main_rows(*ops, mpi, threads, gemm_ms, model_ms, opt_ms, copy_ms, flops, bytes);
    if (compare_gemm) {
      const double ob_ms = median(gob);
      std::printf("# the sgemm-only row with OpenBLAS's own threading (bits depend on the thread count; ratio: its "
                  "time / the fixed tiles' time)\n");
      std::printf("  %-16s %12.3f %9.1f GF/s %10.3f\n", "sgemm openblas-mt", ob_ms, flops / (ob_ms * 1e6),
                  ob_ms / gemm_ms);
    }
    std::printf("# 16-bit wire conversions of one gradient (%" PRId64
                " values; ratio: time of bf16 encode+ef / time)%s\n",
                n, simd ? "" : "; no F16C on this processor: scalar fp16 only");
    const double bf16_ms = median(wire[0].ms);
    for (const WireRow& r : wire) {
      const double ms = median(r.ms);
      std::printf("  %-22s %6.3f %9.2f values/ns %7.3f\n", r.name, ms, static_cast<double>(n) / (ms * 1e6),
                  bf16_ms / ms);
    }
    const double values = static_cast<double>(batch_ * width_);
    const double before_ms = median(data_before), after_ms = median(data_after);
    std::printf("# synthetic data: one batch, %" PRId64 " rows x %" PRId64 " features, %" PRId64
                " classes (ratio: time of the per-element libm fill / time)\n",
                batch_, width_, classes_);
    std::printf("  %-22s %9.3f %9.1f M values/s %7.3f\n", "per-element libm", before_ms, values / (before_ms * 1e3),
                1.0);
    std::printf("  %-22s %9.3f %9.1f M values/s %7.3f\n", "vectorised portable", after_ms, values / (after_ms * 1e3),
                before_ms / after_ms);
  }
  return 0;
}

}  // namespace

std::unique_ptr<Command> register_bench_compute(CLI::App& bench, CLI::App*& sub) {
  sub = bench.add_subcommand(
      "compute", "The step's compute vs pure sgemm on the same shapes (CPU, or --device cuda); optimizer vs a copy");
  return std::make_unique<BenchComputeCommand>(sub);
}

}  // namespace microddp::app
