// test_cuda_graph_ops.cpp — the CUDA graph calls of Ops (ops.hpp): a training step of a small MLP made
// of Ops calls (zero, GEMMs, bias + ReLU, softmax cross-entropy, the backward ops, gradient norm,
// step numerics, Adam over the flat parameters, the loss copied to pinned memory, a time mark),
// captured once and launched N times, equals N eager steps bit for bit, step by step; on the emulated
// device each replay is one graph launch from the host instead of one launch per kernel and GEMM (the
// counters of cuda_emu/counters.h). The calls that wait or allocate refuse to run during a capture; a
// capture that CUDA invalidated fails at end_capture and leaves the Ops usable; the CPU has no graphs.
// Without a CUDA device it exits 77 (skipped: cuda_test_main.hpp).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "cuda_test_main.hpp"
#include "kernel_test_util.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"
#include "kernels/optimizer_kernels.hpp"

#if defined(MICRODDP_TEST_CUDA_EMU)
#include "cuda_emu/counters.h"  // what the emulated device counted (tests only)
#endif

namespace microddp::kernels {
namespace {

// A 2-layer MLP: x (B, In) -> Linear(W1: (H, In), b1) -> ReLU -> Linear(W2: (C, H), b2) -> softmax-xent.
// Parameters and gradients live in one flat buffer each: [W1 | b1 | W2 | b2].
constexpr std::int64_t kB = 24, kIn = 20, kH = 33, kC = 7;
constexpr std::int64_t kW1 = kH * kIn, kB1 = kH, kW2 = kC * kH, kB2 = kC;
constexpr std::int64_t kParams = kW1 + kB1 + kW2 + kB2;

struct Model {
  Model(Ops& o, const std::vector<float>& x0, const std::vector<std::int32_t>& labels0, const std::vector<float>& p0)
      : ops(o),
        x(o, kB * kIn),
        labels(o, kB),
        params(o, kParams),
        grads(o, kParams),
        m(o, kParams),
        v(o, kParams),
        y1(o, kB * kH),
        logits(o, kB * kC),
        dlogits(o, kB * kC),
        dy1(o, kB * kH),
        loss(o, 1),
        gnorm2(o, 1),
        numerics(o, 1),
        host_loss(o, 1),
        opt(make_optimizer_kernels(o)) {
    x.from_host(x0.data(), 0, kB * kIn);
    labels.from_host(labels0.data(), 0, kB);
    params.from_host(p0.data(), 0, kParams);  // m, v, grads: zero-filled by allocate_bytes
  }

  float* w1() { return params.data(); }
  float* b1() { return params.data() + kW1; }
  float* w2() { return params.data() + kW1 + kB1; }
  float* b2() { return params.data() + kW1 + kB1 + kW2; }
  float* dw1() { return grads.data(); }
  float* db1() { return grads.data() + kW1; }
  float* dw2() { return grads.data() + kW1 + kB1; }
  float* db2() { return grads.data() + kW1 + kB1 + kW2; }

  // One step, all of it queued: nothing here waits for the device. Returns the step's time mark.
  std::uint32_t step(const AdamParams& adam) {
    ops.zero(grads.data(), kParams);
    ops.gemm(false, true, kB, kH, kIn, 1.0f, x.data(), w1(), 0.0f, y1.data());
    ops.bias_act_forward(y1.data(), b1(), kB, kH, /*relu=*/true);
    ops.gemm(false, true, kB, kC, kH, 1.0f, y1.data(), w2(), 0.0f, logits.data());
    ops.bias_act_forward(logits.data(), b2(), kB, kC, /*relu=*/false);
    ops.softmax_xent(logits.data(), labels.data(), kB, kC, 1.0f / static_cast<float>(kB), dlogits.data(), loss.data());
    ops.gemm(true, false, kC, kH, kB, 1.0f, dlogits.data(), y1.data(), 1.0f, dw2());
    ops.bias_grad(db2(), dlogits.data(), kB, kC);
    ops.gemm(false, false, kB, kH, kC, 1.0f, dlogits.data(), w2(), 0.0f, dy1.data());
    ops.relu_backward(dy1.data(), y1.data(), kB * kH);
    ops.gemm(true, false, kH, kIn, kB, 1.0f, dy1.data(), x.data(), 1.0f, dw1());
    ops.bias_grad(db1(), dy1.data(), kB, kH);
    ops.sum_squares_to(grads.data(), kParams, gnorm2.data());
    ops.step_numerics(loss.data(), 1, gnorm2.data(), numerics.data());
    opt->adam_step(adam, params.data(), grads.data(), m.data(), v.data(), kParams, nullptr);
    ops.copy_to_host_async(&host_loss[0], loss.data(), sizeof(float));
    return ops.mark();
  }

  std::vector<float> download(const OpsBuffer<float>& b) const {
    std::vector<float> h(static_cast<std::size_t>(b.count()));
    b.to_host(h.data(), 0, b.count());
    return h;
  }

  Ops& ops;
  OpsBuffer<float> x;
  OpsBuffer<std::int32_t> labels;
  OpsBuffer<float> params, grads, m, v, y1, logits, dlogits, dy1, loss;
  OpsBuffer<double> gnorm2;
  OpsBuffer<StepVerdict> numerics;
  OpsHostBuffer<float> host_loss;
  std::unique_ptr<OptimizerKernels> opt;
};

AdamParams adam_params() {
  AdamParams a;
  a.lr = 1e-2f;
  a.weight_decay = 1e-3f;
  a.decoupled = true;
  a.bias_correction1 = 0.1f;  // 1 - 0.9^1: step 1's, reused by every step here (captured by value)
  a.bias_correction2 = 0.001f;
  return a;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

#if defined(MICRODDP_TEST_CUDA_EMU)
cudaEmuCounters counters() {
  cudaEmuCounters c{};
  cudaEmuGetCounters(&c);
  return c;
}
#endif

class CudaGraphOps : public ::testing::Test {
 protected:
  std::unique_ptr<Ops> gpu_ = make_cuda_ops(0, false);
  std::unique_ptr<Ops> cpu_ = make_cpu_ops(1);
  const std::vector<float> x_ = test::random_normal(kB * kIn, 61000);
  const std::vector<std::int32_t> labels_ = test::random_labels(kB, kC, 61001);
  const std::vector<float> p0_ = test::random_normal(kParams, 61002, 0.3f);
};

TEST_F(CudaGraphOps, ACapturedStepReplaysBitwiseLikeEagerStepsWithOneLaunchEach) {
  constexpr int kSteps = 4;
  const AdamParams adam = adam_params();
  ASSERT_TRUE(gpu_->supports_graphs());
  // Eager: the reference, step by step.
  Model eager(*gpu_, x_, labels_, p0_);
  std::vector<float> eager_losses;
#if defined(MICRODDP_TEST_CUDA_EMU)
  cudaEmuCounters per_eager_step{};  // one step's launches from the host
#endif
  for (int s = 0; s < kSteps; ++s) {
#if defined(MICRODDP_TEST_CUDA_EMU)
    cudaEmuResetCounters();
#endif
    eager.step(adam);
#if defined(MICRODDP_TEST_CUDA_EMU)
    per_eager_step = counters();
#endif
    gpu_->synchronize();
    eager_losses.push_back(eager.host_loss[0]);
  }
#if defined(MICRODDP_TEST_CUDA_EMU)
  EXPECT_GT(per_eager_step.kernel_launches, 0u);
  EXPECT_EQ(per_eager_step.gemm_calls, 5u);
  EXPECT_EQ(per_eager_step.graph_launches, 0u);
#endif

  // Graph: the same step recorded once, then launched kSteps times.
  Model graphed(*gpu_, x_, labels_, p0_);
  gpu_->synchronize();
#if defined(MICRODDP_TEST_CUDA_EMU)
  cudaEmuResetCounters();
#endif
  gpu_->begin_capture();
  EXPECT_TRUE(gpu_->capturing());
  const std::uint32_t mark = graphed.step(adam);
  const Ops::GraphId graph = gpu_->end_capture();
  EXPECT_FALSE(gpu_->capturing());
  EXPECT_GT(graph, 0u);
  gpu_->synchronize();
  EXPECT_TRUE(same_bits(graphed.download(graphed.params), p0_)) << "the capture ran nothing";
#if defined(MICRODDP_TEST_CUDA_EMU)
  const cudaEmuCounters captured = counters();
  EXPECT_EQ(captured.kernel_launches + captured.gemm_calls, 0u);
  EXPECT_EQ(captured.captured_operations, per_eager_step.kernel_launches + per_eager_step.gemm_calls + 3)
      << "every kernel and GEMM of the step, zero() (a memset), the loss copy and the mark";
#endif
  std::int64_t previous_mark_ns = 0;
  for (int s = 0; s < kSteps; ++s) {
#if defined(MICRODDP_TEST_CUDA_EMU)
    cudaEmuResetCounters();
#endif
    gpu_->launch_graph(graph);
#if defined(MICRODDP_TEST_CUDA_EMU)
    const cudaEmuCounters replay = counters();
    EXPECT_EQ(replay.graph_launches, 1u) << "one launch from the host per step";
    EXPECT_EQ(replay.kernel_launches + replay.gemm_calls, 0u);
    EXPECT_EQ(replay.graph_kernel_nodes, per_eager_step.kernel_launches);
    EXPECT_EQ(replay.graph_gemm_nodes, per_eager_step.gemm_calls);
    EXPECT_EQ(replay.memset_bytes, per_eager_step.memset_bytes);
    EXPECT_EQ(replay.d2h_pinned_bytes, per_eager_step.d2h_pinned_bytes);
#endif
    gpu_->synchronize();
    EXPECT_EQ(graphed.host_loss[0], eager_losses[static_cast<std::size_t>(s)]) << "step " << s;
    // The mark is recorded again by every replay.
    const std::int64_t t = gpu_->mark_ns(mark);
    EXPECT_GT(t, previous_mark_ns) << "step " << s;
    previous_mark_ns = t;
  }
  EXPECT_TRUE(same_bits(graphed.download(graphed.params), eager.download(eager.params)));
  EXPECT_TRUE(same_bits(graphed.download(graphed.m), eager.download(eager.m)));
  EXPECT_TRUE(same_bits(graphed.download(graphed.v), eager.download(eager.v)));
  EXPECT_TRUE(same_bits(graphed.download(graphed.grads), eager.download(eager.grads)));
  StepVerdict got, want;
  graphed.numerics.to_host(&got, 0, 1);
  eager.numerics.to_host(&want, 0, 1);
  EXPECT_EQ(std::memcmp(&got, &want, sizeof(StepVerdict)), 0);
  gpu_->destroy_graph(graph);
  EXPECT_THROW(gpu_->launch_graph(graph), core::Error) << "destroyed";
  gpu_->destroy_graph(graph);  // twice, or an unknown id: nothing
}

// The optimizer inside a graph (Ops' gated calls): one capture of [gradient in, gate from the
// numerics, clip scale, Adam with its scalars from device memory], replayed with a new step count and
// new numerics staged in pinned memory before each replay, gives the eager sequence's bits
// (scale(clip) + adam_step with that step's bias corrections), and a replay whose numerics flag a
// non-finite gradient changes nothing. The scalars are read at replay time, not captured.
TEST_F(CudaGraphOps, AGatedOptimizerReadsItsScalarsAndVerdictAtReplayTime) {
  constexpr std::int64_t kN = 1000;
  constexpr double kMaxNorm = 2.0;
  struct Buffers {
    Buffers(Ops& o, const std::vector<float>& p0)
        : p(o, kN), g(o, kN), g0(o, kN), m(o, kN), v(o, kN), numerics(o, 1), adam(o, 1), gate(o, 1),
          staged_numerics(o, 1), staged_adam(o, 1), opt(make_optimizer_kernels(o)) {
      p.from_host(p0.data(), 0, kN);
    }
    std::vector<float> download_p() const {
      std::vector<float> h(kN);
      p.to_host(h.data(), 0, kN);
      return h;
    }
    OpsBuffer<float> p, g, g0, m, v;
    OpsBuffer<StepNumerics> numerics;
    OpsBuffer<AdamParams> adam;
    OpsBuffer<UpdateGate> gate;
    OpsHostBuffer<StepNumerics> staged_numerics;
    OpsHostBuffer<AdamParams> staged_adam;
    std::unique_ptr<OptimizerKernels> opt;
  };
  const std::vector<float> p0 = test::random_normal(kN, 61010, 0.5f);
  Buffers eager(*gpu_, p0), graphed(*gpu_, p0);
  auto adam_at = [](int t) {
    AdamParams a = adam_params();
    a.bias_correction1 = static_cast<float>(1.0 - std::pow(0.9, t));
    a.bias_correction2 = static_cast<float>(1.0 - std::pow(0.999, t));
    return a;
  };
  gpu_->synchronize();
  gpu_->begin_capture();
  gpu_->copy_from_host_async(graphed.numerics.data(), &graphed.staged_numerics[0], sizeof(StepNumerics));
  gpu_->copy_from_host_async(graphed.adam.data(), &graphed.staged_adam[0], sizeof(AdamParams));
  gpu_->copy(graphed.g.data(), graphed.g0.data(), kN);
  graphed.opt->update_gate(graphed.numerics.data(), kMaxNorm, graphed.gate.data());
  graphed.opt->scale_gated(graphed.g.data(), graphed.gate.data(), kN);
  graphed.opt->adam_step_gated(graphed.adam.data(), graphed.gate.data(), graphed.p.data(), graphed.g.data(),
                               graphed.m.data(), graphed.v.data(), kN, nullptr);
  const Ops::GraphId graph = gpu_->end_capture();
  int t = 0;  // the optimizer's step count
  for (int s = 0; s < 6; ++s) {
    const std::vector<float> grad = test::random_normal(kN, 61020 + s, s % 2 == 0 ? 0.2f : 0.01f);  // even: clips
    double sumsq = 0.0;
    for (float x : grad) sumsq += static_cast<double>(x) * x;
    const bool skip = s == 3;
    eager.g.from_host(grad.data(), 0, kN);
    graphed.g0.from_host(grad.data(), 0, kN);
    if (!skip) {
      const double clip = clip_factor(std::sqrt(sumsq), kMaxNorm);
      if (clip < 1.0) gpu_->scale(eager.g.data(), static_cast<float>(clip), kN);
      eager.opt->adam_step(adam_at(t + 1), eager.p.data(), eager.g.data(), eager.m.data(), eager.v.data(), kN, nullptr);
    }
    graphed.staged_adam[0] = adam_at(t + 1);
    graphed.staged_numerics[0].agreed = {1.0, 0.0, skip ? 1.0 : 0.0};
    graphed.staged_numerics[0].grad_sum_squares = sumsq;
    gpu_->launch_graph(graph);
    gpu_->synchronize();
    if (!skip) ++t;
    EXPECT_TRUE(same_bits(eager.download_p(), graphed.download_p())) << "step " << s;
    UpdateGate gate;
    graphed.gate.to_host(&gate, 0, 1);
    EXPECT_EQ(gate.skip, skip ? 1 : 0) << "step " << s;
    if (!skip && s % 2 == 0) {
      EXPECT_LT(gate.clip, 1.0f) << "step " << s << " clips";
    }
  }
  EXPECT_FALSE(same_bits(p0, graphed.download_p())) << "the replays updated";
  for (OpsBuffer<float>* b : {&graphed.m, &graphed.v}) {
    OpsBuffer<float>& e = b == &graphed.m ? eager.m : eager.v;
    std::vector<float> want(kN), got(kN);
    e.to_host(want.data(), 0, kN);
    b->to_host(got.data(), 0, kN);
    EXPECT_TRUE(same_bits(want, got));
  }
  gpu_->destroy_graph(graph);
}

TEST_F(CudaGraphOps, CallsThatWaitOrAllocateRefuseDuringACapture) {
  Model model(*gpu_, x_, labels_, p0_);
  gpu_->synchronize();
  EXPECT_THROW(gpu_->end_capture(), core::Error) << "no capture open";
  EXPECT_THROW(gpu_->launch_graph(0), core::Error);
  gpu_->begin_capture();
  EXPECT_THROW(gpu_->begin_capture(), core::Error) << "one capture at a time";
  model.step(adam_params());
  float host = 0.0f;
  EXPECT_THROW(gpu_->synchronize(), core::Error);
  EXPECT_THROW((void)gpu_->sum_squares(model.params.data(), kParams), core::Error);
  EXPECT_THROW(gpu_->copy_to_host(&host, model.loss.data(), sizeof host), core::Error);
  EXPECT_THROW(gpu_->copy_from_host(model.loss.data(), &host, sizeof host), core::Error);
  EXPECT_THROW((void)gpu_->allocate_bytes(64), core::Error);
  EXPECT_THROW((void)gpu_->allocate_host_bytes(64), core::Error);
  EXPECT_TRUE(gpu_->capturing()) << "refused before CUDA saw them: the capture is still good";
  const Ops::GraphId graph = gpu_->end_capture();
  gpu_->destroy_graph(graph);
  // abort_capture drops what was recorded; the ops work eagerly again.
  gpu_->begin_capture();
  model.step(adam_params());
  gpu_->abort_capture();
  EXPECT_FALSE(gpu_->capturing());
  gpu_->synchronize();
  EXPECT_TRUE(same_bits(model.download(model.params), p0_)) << "an aborted capture ran nothing";
  model.step(adam_params());
  gpu_->synchronize();
  EXPECT_FALSE(same_bits(model.download(model.params), p0_)) << "an eager step runs";
}

// free_bytes cannot throw: CUDA refuses its synchronisation inside the capture, which fails at
// end_capture with CUDA's reason; the Ops stay usable and nothing leaks (the memory is freed later).
TEST_F(CudaGraphOps, ACaptureThatCudaInvalidatedFailsAtEndCapture) {
  Model model(*gpu_, x_, labels_, p0_);
  void* spare = gpu_->allocate_bytes(256);
  gpu_->synchronize();
  gpu_->begin_capture();
  model.step(adam_params());
  gpu_->free_bytes(spare);  // refused by CUDA: the capture is invalidated (and spare stays allocated)
  try {
    (void)gpu_->end_capture();
    ADD_FAILURE() << "end_capture must throw";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaErrorStreamCapture"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(gpu_->capturing());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "no stale error for the next launch check";
  model.step(adam_params());
  gpu_->synchronize();
  gpu_->free_bytes(spare);
}

TEST_F(CudaGraphOps, TheCpuHasNoGraphs) {
  EXPECT_FALSE(cpu_->supports_graphs());
  EXPECT_FALSE(cpu_->capturing());
  EXPECT_THROW(cpu_->begin_capture(), core::Error);
  EXPECT_THROW((void)cpu_->end_capture(), core::Error);
  EXPECT_THROW(cpu_->launch_graph(1), core::Error);
  cpu_->abort_capture();
  cpu_->destroy_graph(1);
}

}  // namespace
}  // namespace microddp::kernels

int main(int argc, char** argv) { return microddp::kernels::test::cuda_test_main(argc, argv); }
