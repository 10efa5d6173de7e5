// test_ddp_device.cpp — training with the model on the GPU (`train --device cuda`), against the CPU.
// Label cuda: every test skips without a GPU (one per rank for NCCL), so ctest reports the program
// as skipped (exit 77), never as passed. What each test proves:
//   * GPU vs CPU: the same configuration trained on CudaOps over each device backend (nccl,
//     nccl-ring when built, and mpi and hier through pinned-host staging; hier's nodes from
//     MICRODDP_HIER_NODE_SIZES where ctest sets it) and on CpuOps over `mpi` gives the
//     same losses, gradient norms and parameters within 1e-4 relative (cuBLAS and OpenBLAS sum the
//     GEMMs in different orders; TF32 stays off). SGD keeps the comparison sharp: unlike Adam it
//     does not amplify sign flips of near-zero gradient elements into lr-sized steps.
//   * Ranks stay bitwise identical on the GPU: the divergence check runs after every step.
//   * Exact resume on the GPU: the host view (host_state / state_from_host, what checkpoints use)
//     taken after N steps and loaded into a fresh trainer continues bitwise equal to the run that
//     never stopped (same GPU, backend and world size).
//   * Sharded data parallelism (--shard) on the GPU equals plain DDP there and resumes bitwise.
//   * Gradient clipping and the NaN verdict on the GPU: the norm computed on the device
//     (Ops::sum_squares) matches the CPU's, and a NaN injected into one rank's gradient is skipped
//     on every rank.
//   * A step replayed as a CUDA graph (--cuda-graph) trains the same bits as the eager step, for
//     every strategy, SGD and Adam with clipping, synthetic and file data; the emulated device
//     counts one graph launch per step and the GEMMs gone from the host.
//   * A learning-rate schedule (warmup + cosine, step) gives every step the closed form's rate on the
//     device as on the CPU, and a replayed CUDA graph follows it bit for bit.
// The same program also runs with CpuOps standing in for the GPU (MICRODDP_TEST_DEVICE_STANDIN=cpu,
// ctest ddp_device_standin, label ddp): it checks the tests themselves (tolerances, the resume
// protocol, the skip verdicts) on every machine, so that only the CUDA implementations are left
// unverified where no GPU is.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "comm/factory.hpp"
#include "comm/gpu/gpu_sharing.hpp"
#include "core/error.hpp"
#include "ddp/trainer_data_lease.hpp"
#include "ddp/step_graph.hpp"
#include "ddp/trainer.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/ops.hpp"
#include "support/gpu_ranks.hpp"
#include "support/memory_source.hpp"
#include "support/mpi_test_env.hpp"

#if defined(MICRODDP_TEST_CUDA_EMU)
#include "cuda_emu/control.h"
#include "cuda_emu/counters.h"
#endif

namespace microddp::ddp {
namespace {

TrainConfig gpu_config() {
  TrainConfig c;
  c.model = model::MlpConfig{24, 48, 4, 3};
  c.global_batch = 37;  // uneven shares over 2 ranks
  c.steps = 12;
  c.seed = 11;
  c.strategy = Strategy::Bucketed;
  c.sync_options = {4096.0 / (1024.0 * 1024.0), 0.0};  // several buckets: collectives overlap backward
  c.optimizer.name = "sgd";
  c.optimizer.lr = 0.05f;
  c.optimizer.momentum = 0.9f;
  c.check_every = 1;  // ranks bitwise identical after every step
  return c;
}

struct RunState {
  std::vector<float> params;
  std::vector<std::vector<float>> state;
  std::vector<StepRecord> records;
};

RunState snapshot(Trainer& t, std::vector<StepRecord> records) {
  RunState r;
  t.state_to_host();
  const Trainer::HostState& h = t.host_state();
  r.params.assign(h.params, h.params + t.model().flat_count());
  for (const auto& b : h.optimizer) r.state.emplace_back(b.data, b.data + b.count);
  r.records = std::move(records);
  return r;
}

RunState train(const TrainConfig& cfg, comm::Communicator& comm, kernels::Ops& ops) {
  comm.set_compute_stream(ops.stream());
  Trainer t(cfg, comm, ops);
  t.setup();
  std::vector<StepRecord> recs;
  while (t.steps_done() < cfg.steps) recs.push_back(t.step());
  t.check_divergence();
  return snapshot(t, recs);
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
  return d;
}

double max_abs(const std::vector<float>& a) {
  double m = 0.0;
  for (float x : a) m = std::max(m, std::abs(static_cast<double>(x)));
  return m;
}

bool cpu_standin() {
  const char* v = std::getenv("MICRODDP_TEST_DEVICE_STANDIN");
  return v != nullptr && std::string(v) == "cpu";
}

// Whether `backend` runs its collectives on CUDA streams (nccl, nccl-ring): one GPU per rank, and
// ordered after the compute stream on the device. Host backends (mpi, hier) stage through the host.
bool is_stream_backend(const std::string& backend) {
  return comm::describe_backend(backend).kind == comm::BackendKind::Stream;
}

// The GPU of this rank, or -1 (skip) when `backend` cannot run here: no GPU on some rank, or an NCCL
// backend where ranks share a GPU (UUIDs compared: with CUDA_VISIBLE_DEVICES set per rank every
// rank sees one GPU, and they differ). 0 for the CPU stand-in (over `mpi` only: it checks the tests,
// not the backends). Collective: every rank calls it.
int gpu_for(const std::string& backend) {
  const auto& rt = microddp::testing::runtime();
  if (cpu_standin()) return backend == "mpi" ? 0 : -1;
  const comm::GpuSharing sharing = microddp::testing::exchange_rank_gpus(rt);
  if (sharing.ranks_without_gpu > 0 || (is_stream_backend(backend) && sharing.shared())) return -1;
  return rt.local_rank() % kernels::cuda_device_count();
}

// The "device" ops under test: CudaOps on `gpu`, or CpuOps for the stand-in run.
std::unique_ptr<kernels::Ops> device_ops(int gpu) {
  return cpu_standin() ? kernels::make_cpu_ops(1) : kernels::make_cuda_ops(gpu, /*tf32=*/false);
}

// Device backends compiled into this build (the factory's descriptions say which accept device buffers).
std::vector<std::string> device_backends() {
  std::vector<std::string> out;
  for (const auto& b : comm::available_backends()) {
    if (comm::describe_backend(b).accepts_device_buffers) out.push_back(b);
  }
  return out;
}

// The backend under test, with the communication settings of the environment (MICRODDP_HIER_NODE_SIZES...).
std::unique_ptr<comm::Communicator> make_comm(const std::string& backend) {
  return comm::make_communicator(backend, microddp::testing::runtime(), microddp::testing::comm_config());
}

// The reference (CpuOps over `mpi`) and the run under test (device ops over `backend`), same config.
std::pair<RunState, RunState> cpu_and_device_runs(const TrainConfig& cfg, const std::string& backend, int gpu) {
  const auto& rt = microddp::testing::runtime();
  RunState cpu_run;
  {
    auto cpu = kernels::make_cpu_ops(1);
    auto comm = comm::make_communicator("mpi", rt);
    cpu_run = train(cfg, *comm, *cpu);
  }
  auto ops = device_ops(gpu);
  auto comm = make_comm(backend);
  return {std::move(cpu_run), train(cfg, *comm, *ops)};
}

// Sets an environment variable for a scope (restores the previous value, or unsets it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

class DeviceTraining : public ::testing::TestWithParam<std::string> {};

// 20 steps within 1e-5 relative: cuBLAS and OpenBLAS sum each GEMM in a different order (and nvcc
// contracts to FMA), which moves a loss of this small model by ~1e-7 per step; over 20 steps of
// momentum SGD that stays far below 1e-5 (measured across CPU summation orders: the same run at
// np 1-4 and 1-2 BLAS threads agrees in all printed digits for 18 steps, docs/gpu.md), while a
// wrong index or a missing synchronisation moves it by orders of magnitude more.
TEST_P(DeviceTraining, MatchesCpuTraining) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  TrainConfig cfg = gpu_config();
  cfg.steps = 20;
  const auto [cpu_run, gpu_run] = cpu_and_device_runs(cfg, GetParam(), gpu);
  ASSERT_EQ(gpu_run.records.size(), cpu_run.records.size());
  for (std::size_t s = 0; s < cpu_run.records.size(); ++s) {
    EXPECT_NEAR(gpu_run.records[s].loss, cpu_run.records[s].loss, 1e-5 * cpu_run.records[s].loss) << "step " << s + 1;
    EXPECT_NEAR(gpu_run.records[s].grad_norm, cpu_run.records[s].grad_norm, 1e-5 * cpu_run.records[s].grad_norm)
        << "step " << s + 1;
  }
  EXPECT_LE(max_abs_diff(gpu_run.params, cpu_run.params), 1e-5 * std::max(1.0, max_abs(cpu_run.params)));
  ASSERT_EQ(gpu_run.state.size(), 1u);  // SGD momentum
  EXPECT_LE(max_abs_diff(gpu_run.state[0], cpu_run.state[0]), 1e-5 * std::max(1.0, max_abs(cpu_run.state[0])));
  // Training happened (so the comparison is not of two untouched initialisations).
  EXPECT_LT(cpu_run.records.back().loss, cpu_run.records.front().loss);
}

// --precision bf16 on the device (cublasGemmEx, the forward's and backward's rounding kernels) against
// the CPU's bf16 reference (operands rounded by the same element function, sgemm). As with 16-bit
// compression, a rounding can flip where the two fp32 GEMM results differ by their ~1e-7, moving one
// operand by a bf16 step (2^-8): 1e-3 relative, far below the gap to fp32 training, checked too.
TEST_P(DeviceTraining, Bf16FollowsTheCpuBf16Reference) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  TrainConfig cfg = gpu_config();
  cfg.steps = 10;
  cfg.precision = core::Precision::Bf16;
  const auto [cpu_run, gpu_run] = cpu_and_device_runs(cfg, GetParam(), gpu);
  RunState fp32_run;
  {
    TrainConfig fp32 = cfg;
    fp32.precision = core::Precision::Fp32;
    auto cpu = kernels::make_cpu_ops(1);
    auto comm = comm::make_communicator("mpi", microddp::testing::runtime());
    fp32_run = train(fp32, *comm, *cpu);
  }
  ASSERT_EQ(gpu_run.records.size(), cpu_run.records.size());
  double gap_to_fp32 = 0.0;
  for (std::size_t s = 0; s < cpu_run.records.size(); ++s) {
    EXPECT_NEAR(gpu_run.records[s].loss, cpu_run.records[s].loss, 1e-3 * cpu_run.records[s].loss) << "step " << s + 1;
    EXPECT_NEAR(gpu_run.records[s].grad_norm, cpu_run.records[s].grad_norm, 1e-3 * cpu_run.records[s].grad_norm)
        << "step " << s + 1;
    gap_to_fp32 = std::max(gap_to_fp32, std::abs(cpu_run.records[s].grad_norm - fp32_run.records[s].grad_norm) /
                                            fp32_run.records[s].grad_norm);
  }
  EXPECT_GT(gap_to_fp32, 1e-4) << "bf16 training must differ from fp32 training";
  EXPECT_LE(max_abs_diff(gpu_run.params, cpu_run.params), 1e-3 * std::max(1.0, max_abs(cpu_run.params)));
  EXPECT_LT(cpu_run.records.back().loss, cpu_run.records.front().loss);
}

// Gradient compression on the device (docs/compression.md): the encode/decode kernels, the 16-bit
// collectives (NCCL's native fp16/bf16, staged MPI with our MPI_Op) and PowerSGD's GEMMs with the
// host orthonormalisation. Ranks stay bitwise identical (divergence check after every step) and
// training follows the CPU run with the same compression: 16-bit rounding can flip where GPU and CPU
// gradients differ by their ~1e-7 GEMM rounding, one bf16 step (2^-8) in one element, so the
// losses agree to 1e-3 relative here, not 1e-5; a wrong kernel moves them by far more.
TEST_P(DeviceTraining, CompressedTrainingFollowsCpu) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  // bf16 stands for both 16-bit formats (one code path, the format a kernel argument); 6 steps keep
  // the emulated device's CI time small.
  for (const CompressionMode mode : {CompressionMode::Bf16, CompressionMode::PowerSgd}) {
    SCOPED_TRACE(compression_mode_name(mode));
    TrainConfig cfg = gpu_config();
    cfg.steps = 6;
    cfg.compression.mode = mode;
    cfg.compression.powersgd_rank = 2;
    const auto [cpu_run, gpu_run] = cpu_and_device_runs(cfg, GetParam(), gpu);
    ASSERT_EQ(gpu_run.records.size(), cpu_run.records.size());
    for (std::size_t s = 0; s < cpu_run.records.size(); ++s) {
      EXPECT_NEAR(gpu_run.records[s].loss, cpu_run.records[s].loss, 1e-3 * cpu_run.records[s].loss) << "step " << s + 1;
    }
    EXPECT_LT(gpu_run.records.back().loss, gpu_run.records.front().loss);
  }
}

TEST_P(DeviceTraining, ResumeFromHostStateIsBitwise) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  TrainConfig cfg = gpu_config();
  cfg.optimizer.name = "adam";  // moments and the step count must round-trip too
  cfg.optimizer.lr = 1e-2f;
  auto ops = device_ops(gpu);
  auto comm = make_comm(GetParam());
  comm->set_compute_stream(ops->stream());
  const std::int64_t stop_at = 5;
  RunState saved, straight;
  std::int64_t optimizer_steps = 0;
  {
    Trainer t(cfg, *comm, *ops);
    t.setup();
    while (t.steps_done() < stop_at) t.step();
    saved = snapshot(t, {});
    optimizer_steps = t.optimizer().steps_taken();
    while (t.steps_done() < cfg.steps) t.step();
    straight = snapshot(t, {});
  }
  Trainer resumed(cfg, *comm, *ops);
  resumed.setup();
  const Trainer::HostState& h = resumed.host_state();
  std::memcpy(h.params, saved.params.data(), saved.params.size() * sizeof(float));
  ASSERT_EQ(h.optimizer.size(), saved.state.size());
  for (std::size_t i = 0; i < saved.state.size(); ++i) {
    std::memcpy(h.optimizer[i].data, saved.state[i].data(), saved.state[i].size() * sizeof(float));
  }
  resumed.state_from_host();
  resumed.optimizer().set_steps_taken(optimizer_steps);
  resumed.restore_progress(stop_at);
  while (resumed.steps_done() < cfg.steps) resumed.step();
  const RunState r = snapshot(resumed, {});
  ASSERT_EQ(r.params.size(), straight.params.size());
  EXPECT_EQ(std::memcmp(r.params.data(), straight.params.data(), r.params.size() * sizeof(float)), 0);
  for (std::size_t i = 0; i < r.state.size(); ++i) {
    EXPECT_EQ(std::memcmp(r.state[i].data(), straight.state[i].data(), r.state[i].size() * sizeof(float)), 0) << i;
  }
  // The resumed run really continued from step 5 (it differs from the state it was loaded with).
  EXPECT_NE(std::memcmp(r.params.data(), saved.params.data(), r.params.size() * sizeof(float)), 0);
}

TEST_P(DeviceTraining, ClippingAndNanSkipMatchCpu) {
  const auto& rt = microddp::testing::runtime();
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  TrainConfig cfg = gpu_config();
  cfg.clip_grad_norm = 0.05f;
  cfg.on_nan = NanPolicy::Skip;
  // The last rank's synchronised gradient gets a NaN at step 4.
  cfg.faults.arm({std::string(trainer_fault_point::kNanGradient), rt.size() - 1, 4, ""});
  const auto [cpu_run, gpu_run] = cpu_and_device_runs(cfg, GetParam(), gpu);
  for (std::size_t s = 0; s < cpu_run.records.size(); ++s) {
    EXPECT_EQ(gpu_run.records[s].skipped, cpu_run.records[s].skipped) << "step " << s + 1;
    if (cpu_run.records[s].skipped) continue;
    EXPECT_GT(cpu_run.records[s].grad_norm, 1.5 * cfg.clip_grad_norm) << "step " << s + 1 << ": clip would not engage";
    EXPECT_NEAR(gpu_run.records[s].grad_norm, cpu_run.records[s].grad_norm, 1e-4 * cpu_run.records[s].grad_norm)
        << "step " << s + 1;
  }
  EXPECT_TRUE(cpu_run.records[3].skipped);
  EXPECT_LE(max_abs_diff(gpu_run.params, cpu_run.params), 1e-4 * std::max(1.0, max_abs(cpu_run.params)));
}

// Sharded data parallelism on the device (--shard optimizer | gradients, ddp/zero): the same device,
// backend and world size as plain bucketed DDP, within 1e-6 relative after 12 Adam steps (only the
// reduce-scatter's summation order can differ, docs/zero.md), every rank bitwise identical (the
// divergence check runs after every step), and the full optimizer state gathered through the host
// view (what a checkpoint stores) loads into a fresh sharded trainer that continues bitwise.
TEST_P(DeviceTraining, ShardedMatchesDdpAndResumesBitwise) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  TrainConfig cfg = gpu_config();
  cfg.optimizer.name = "adam";
  cfg.optimizer.lr = 1e-2f;
  cfg.clip_grad_norm = 0.5f;
  auto ops = device_ops(gpu);
  auto comm = make_comm(GetParam());
  const RunState ddp = train(cfg, *comm, *ops);
  for (const zero::ShardMode mode : {zero::ShardMode::Optimizer, zero::ShardMode::Gradients}) {
    SCOPED_TRACE(std::string(zero::shard_mode_name(mode)));
    TrainConfig z = cfg;
    z.shard = mode;
    const RunState sharded = train(z, *comm, *ops);
    ASSERT_EQ(sharded.params.size(), ddp.params.size());
    EXPECT_LE(max_abs_diff(sharded.params, ddp.params), 1e-6 * max_abs(ddp.params));
    ASSERT_EQ(sharded.state.size(), ddp.state.size());  // the full state, gathered from the shards
    for (std::size_t i = 0; i < ddp.state.size(); ++i) {
      EXPECT_LE(max_abs_diff(sharded.state[i], ddp.state[i]), 1e-5 * std::max(1e-30, max_abs(ddp.state[i]))) << i;
    }
    // Resume after 5 steps through the host view.
    RunState saved;
    std::int64_t optimizer_steps = 0;
    {
      Trainer t(z, *comm, *ops);
      t.setup();
      while (t.steps_done() < 5) t.step();
      saved = snapshot(t, {});
      optimizer_steps = t.optimizer().steps_taken();
    }
    Trainer resumed(z, *comm, *ops);
    resumed.setup();
    const Trainer::HostState& h = resumed.host_state();
    std::memcpy(h.params, saved.params.data(), saved.params.size() * sizeof(float));
    for (std::size_t i = 0; i < saved.state.size(); ++i) {
      std::memcpy(h.optimizer[i].data, saved.state[i].data(), saved.state[i].size() * sizeof(float));
    }
    resumed.state_from_host();
    resumed.optimizer().set_steps_taken(optimizer_steps);
    resumed.restore_progress(5);
    while (resumed.steps_done() < z.steps) resumed.step();
    const RunState r = snapshot(resumed, {});
    EXPECT_EQ(std::memcmp(r.params.data(), sharded.params.data(), r.params.size() * sizeof(float)), 0);
  }
}

// --cuda-graph (ddp/step_graph.hpp): a run whose steady-state step is replayed as one CUDA graph
// trains the same bits as the same run launched call by call, for every strategy, with Adam and
// clipping (the optimizer is in the graph: its step count staged per replay, its clip factor made on
// the device) and with a file source (the upload is outside the graph). Where the run cannot graph (the CPU stand-in, host
// backends), auto falls back to the eager step and `on` is a usage error naming why.
TEST_P(DeviceTraining, GraphedStepIsBitwiseTheEagerStep) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  // Bitwise only if NCCL sums in the same order in both runs: at 3 or more ranks it may pick another
  // algorithm or protocol for a captured call than for the eager one (its tuning sees the capture),
  // so both are pinned for every communicator made below (NCCL reads them at ncclCommInitRank).
  const ScopedEnv algo("NCCL_ALGO", "Ring"), proto("NCCL_PROTO", "Simple");
  const auto source =
      microddp::testing::MemorySource::synthetic(5, 90, gpu_config().model.in_dim, gpu_config().model.classes);
  struct Run {
    RunState state;
    std::string note;
    std::int64_t replays = 0;
  };
  auto run = [&](TrainConfig cfg, CudaGraphMode mode, bool from_source) {
    cfg.cuda_graph = mode;
    auto ops = device_ops(gpu);
    auto comm = make_comm(GetParam());
    comm->set_compute_stream(ops->stream());
    Trainer t(cfg, *comm, *ops);
    DataSourceLease lease;
    if (from_source) lease = t.set_data_source(source);
    t.setup();
    std::vector<StepRecord> recs;
    while (t.steps_done() < cfg.steps) recs.push_back(t.step());
    t.check_divergence();
    return Run{snapshot(t, recs), t.step_graph().describe(), t.step_graph().replays()};
  };
  const bool can_graph = !cpu_standin() && is_stream_backend(GetParam());
  // Every strategy once, each optimizer and each data path twice (the emulator is slow: 8 runs per
  // backend); a backend that cannot graph checks its fallback on one of them.
  struct Case {
    const char* strategy;
    bool adam;  // Adam with clipping and a file source; else SGD on the synthetic set (made on the device)
    bool bf16 = false;  // --precision bf16: the rounding kernels and cublasGemmEx in the graph
  };
  const std::vector<Case> cases = can_graph ? std::vector<Case>{{"naive", false}, {"flat", true}, {"overlap", true},
                                                                {"bucketed", false, true}}
                                            : std::vector<Case>{{"bucketed", true}};
  for (const Case& c : cases) {
    const bool adam = c.adam;
    TrainConfig cfg = gpu_config();
    cfg.strategy = parse_strategy(c.strategy);
    cfg.steps = 6;
    if (adam) {
      cfg.optimizer.name = "adam";
      cfg.optimizer.lr = 0.01f;
      cfg.clip_grad_norm = 0.5f;  // a clip factor from each step's verdict
    }
    if (c.bf16) cfg.precision = core::Precision::Bf16;
    const std::string what = std::string(c.strategy) + (adam ? " adam+clip" : " sgd") + (c.bf16 ? " bf16" : "");
    const bool from_source = adam;  // the file path's upload (prefetched) and the generator's
    const Run eager = run(cfg, CudaGraphMode::Off, from_source);
    const Run graphed = run(cfg, CudaGraphMode::Auto, from_source);
    EXPECT_EQ(eager.note, "off (--cuda-graph off)");
    if (!can_graph) {
      EXPECT_EQ(graphed.note.rfind("off (", 0), 0u) << graphed.note;
      EXPECT_EQ(graphed.replays, 0);
      TrainConfig on = cfg;
      on.cuda_graph = CudaGraphMode::On;
      auto ops = device_ops(gpu);
      auto comm = make_comm(GetParam());
      EXPECT_THROW((void)Trainer(on, *comm, *ops), core::UsageError) << what;
      continue;
    }
    EXPECT_EQ(graphed.note.rfind("on (", 0), 0u) << graphed.note;
    EXPECT_EQ(graphed.replays, cfg.steps - StepGraph::kWarmupSteps) << what;
    ASSERT_EQ(graphed.state.records.size(), eager.state.records.size());
    for (std::size_t i = 0; i < eager.state.records.size(); ++i) {
      EXPECT_EQ(graphed.state.records[i].loss, eager.state.records[i].loss) << what << " step " << i;
      EXPECT_EQ(graphed.state.records[i].grad_norm, eager.state.records[i].grad_norm) << what << " step " << i;
    }
    ASSERT_EQ(graphed.state.params.size(), eager.state.params.size());
    EXPECT_EQ(std::memcmp(graphed.state.params.data(), eager.state.params.data(),
                          eager.state.params.size() * sizeof(float)),
              0)
        << what << ": parameters";
    ASSERT_EQ(graphed.state.state.size(), eager.state.state.size());
    for (std::size_t b = 0; b < eager.state.state.size(); ++b)
      EXPECT_EQ(graphed.state.state[b], eager.state.state[b]) << what << ": optimizer state " << b;
  }
}

// --lr-schedule on the device (model/lr_schedule.hpp): the rate of every step is the closed form's,
// reaches the device through the optimizer's staged per-step scalars, and so also a step replayed
// from a CUDA graph (captured once, while the rate changes every step): the graphed run is the eager
// run bit for bit, and both follow the CPU run as MatchesCpuTraining's do. Warmup then cosine decay
// with Adam (the rate in the bias-corrected update) and a step schedule with momentum SGD.
TEST_P(DeviceTraining, ScheduledLearningRateOnTheDeviceAndInTheGraph) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  const bool can_graph = !cpu_standin() && is_stream_backend(GetParam());
  for (const bool cosine : {true, false}) {
    TrainConfig cfg = gpu_config();
    cfg.steps = 10;
    if (cosine) {
      cfg.optimizer.name = "adam";
      cfg.optimizer.lr = 0.01f;
      cfg.lr_schedule.kind = model::LrScheduleKind::Cosine;
      cfg.lr_schedule.warmup_steps = 3;
      cfg.lr_schedule.min_lr = 0.001f;
      cfg.lr_schedule.decay_steps = 9;  // the last step runs at min_lr
    } else {
      cfg.lr_schedule.kind = model::LrScheduleKind::Step;
      cfg.lr_schedule.milestones = "4,7";
      cfg.lr_schedule.gamma = 0.3f;
    }
    const std::string what = cosine ? "warmup+cosine adam" : "step sgd";
    const model::LrSchedule want(cfg.optimizer.lr, cfg.lr_schedule);
    cfg.cuda_graph = CudaGraphMode::Off;
    const auto [cpu_run, eager] = cpu_and_device_runs(cfg, GetParam(), gpu);
    ASSERT_EQ(eager.records.size(), cpu_run.records.size());
    for (std::size_t i = 0; i < eager.records.size(); ++i) {
      EXPECT_EQ(eager.records[i].lr, want.lr(static_cast<std::int64_t>(i))) << what << " step " << i;
      EXPECT_EQ(cpu_run.records[i].lr, want.lr(static_cast<std::int64_t>(i))) << what << " step " << i;
      EXPECT_NEAR(eager.records[i].loss, cpu_run.records[i].loss, 1e-5 * cpu_run.records[i].loss) << what << " step " << i;
    }
    EXPECT_LE(max_abs_diff(eager.params, cpu_run.params), 1e-5 * std::max(1.0, max_abs(cpu_run.params))) << what;
    // The schedule mattered: the same run at the constant base rate ends elsewhere.
    TrainConfig constant = cfg;
    constant.lr_schedule = model::LrScheduleConfig{};
    {
      auto cpu = kernels::make_cpu_ops(1);
      auto comm = comm::make_communicator("mpi", microddp::testing::runtime());
      const RunState c = train(constant, *comm, *cpu);
      EXPECT_GT(max_abs_diff(c.params, cpu_run.params), 1e-4) << what << ": the schedule changed nothing";
    }
    if (!can_graph) continue;
    cfg.cuda_graph = CudaGraphMode::On;
    auto ops = device_ops(gpu);
    auto comm = make_comm(GetParam());
    const RunState graphed = train(cfg, *comm, *ops);
    ASSERT_EQ(graphed.records.size(), eager.records.size());
    for (std::size_t i = 0; i < eager.records.size(); ++i) {
      EXPECT_EQ(graphed.records[i].lr, eager.records[i].lr) << what << " step " << i;
      EXPECT_EQ(graphed.records[i].loss, eager.records[i].loss) << what << " step " << i;
    }
    EXPECT_EQ(std::memcmp(graphed.params.data(), eager.params.data(), eager.params.size() * sizeof(float)), 0)
        << what << ": the graphed run's parameters differ from the eager run's";
    for (std::size_t b = 0; b < eager.state.size(); ++b)
      EXPECT_EQ(graphed.state[b], eager.state[b]) << what << ": optimizer state " << b;
  }
}

// --on-nan skip inside the graph: the replayed optimizer cannot wait for the host's verdict, so the
// device skips it from the all-reduced numbers. A batch with a NaN input at step 4 (a replayed step):
// that step is skipped in both runs and the graphed run ends with the eager run's bits (parameters,
// Adam moments; the step count shows in every later step's bias corrections).
TEST_P(DeviceTraining, GraphedStepSkipsANonFiniteStepOnTheDevice) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  if (cpu_standin() || !is_stream_backend(GetParam())) GTEST_SKIP() << "graphs need a stream-ordered backend";
  TrainConfig cfg = gpu_config();
  cfg.steps = 6;
  cfg.optimizer.name = "adam";
  cfg.optimizer.lr = 0.01f;
  cfg.clip_grad_norm = 0.5f;
  cfg.on_nan = NanPolicy::Skip;
  constexpr std::int64_t kNanStep = 3;  // 0-based: the fourth step, the third replay
  const std::int64_t rows = cfg.steps * cfg.global_batch;  // read in order, no wrap-around
  auto source = microddp::testing::MemorySource::synthetic(5, rows, cfg.model.in_dim, cfg.model.classes);
  std::vector<float> x(static_cast<std::size_t>(rows * cfg.model.in_dim));
  std::vector<std::int32_t> y(static_cast<std::size_t>(rows));
  source.fill(0, rows, x.data(), y.data());
  x[static_cast<std::size_t>(kNanStep * cfg.global_batch * cfg.model.in_dim)] = std::numeric_limits<float>::quiet_NaN();
  const microddp::testing::MemorySource poisoned(cfg.model.in_dim, cfg.model.classes, x, y);
  auto run = [&](CudaGraphMode mode) {
    TrainConfig c = cfg;
    c.cuda_graph = mode;
    auto ops = device_ops(gpu);
    auto comm = make_comm(GetParam());
    comm->set_compute_stream(ops->stream());
    Trainer t(c, *comm, *ops);
    DataSourceLease lease = t.set_data_source(poisoned);
    t.setup();
    std::vector<StepRecord> recs;
    while (t.steps_done() < c.steps) recs.push_back(t.step());
    EXPECT_EQ(t.optimizer_steps(), c.steps - 1) << "one step skipped";
    return std::make_pair(snapshot(t, recs), t.step_graph().replays());
  };
  const auto [eager, no_replays] = run(CudaGraphMode::Off);
  const auto [graphed, replays] = run(CudaGraphMode::On);
  EXPECT_EQ(no_replays, 0);
  EXPECT_EQ(replays, cfg.steps - StepGraph::kWarmupSteps);
  for (std::size_t i = 0; i < eager.records.size(); ++i) {
    EXPECT_EQ(eager.records[i].skipped, i == static_cast<std::size_t>(kNanStep)) << "step " << i;
    EXPECT_EQ(graphed.records[i].skipped, eager.records[i].skipped) << "step " << i;
    if (!eager.records[i].skipped) {
      EXPECT_EQ(graphed.records[i].loss, eager.records[i].loss) << "step " << i;
    }
  }
  EXPECT_EQ(std::memcmp(graphed.params.data(), eager.params.data(), eager.params.size() * sizeof(float)), 0);
  ASSERT_EQ(graphed.state.size(), eager.state.size());
  for (std::size_t b = 0; b < eager.state.size(); ++b) EXPECT_EQ(graphed.state[b], eager.state[b]) << "state " << b;
}

// A decision the capture baked in goes stale: with bf16 the captured forward skips rounding the weights
// (the optimizer's pass wrote their copy), so weights changed from the host afterwards (a state loaded
// into a running trainer) would be replayed through the old copy. The trainer must capture again; the
// graphed run then ends with the eager run's bits (the eager step re-rounds the changed weights).
TEST_P(DeviceTraining, GraphIsCapturedAgainWhenTheBf16CopyGoesStale) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  if (cpu_standin() || !is_stream_backend(GetParam())) GTEST_SKIP() << "graphs need a stream-ordered backend";
  TrainConfig cfg = gpu_config();
  cfg.precision = core::Precision::Bf16;
  cfg.steps = 7;
  cfg.check_every = 0;  // the divergence check takes the weights' writable view, which drops the copy every step
  auto run = [&](CudaGraphMode mode) {
    TrainConfig c = cfg;
    c.cuda_graph = mode;
    auto ops = device_ops(gpu);
    auto comm = make_comm(GetParam());
    Trainer t(c, *comm, *ops);
    t.setup();
    std::vector<StepRecord> recs;
    while (t.steps_done() < 4) recs.push_back(t.step());  // captured at step 2, replayed at 3 and 4
    t.state_to_host();
    const Trainer::HostState& h = t.host_state();
    for (std::int64_t i = 0; i < t.model().flat_count(); ++i) h.params[i] *= 0.5f;  // weights changed from the host
    t.state_from_host();
    while (t.steps_done() < c.steps) recs.push_back(t.step());
    return std::make_pair(snapshot(t, recs), t.step_graph().captures());
  };
  const auto [eager, no_captures] = run(CudaGraphMode::Off);
  const auto [graphed, captures] = run(CudaGraphMode::On);
  EXPECT_EQ(no_captures, 0);
  EXPECT_GE(captures, 2) << "the stale graph must be captured again";
  for (std::size_t i = 0; i < eager.records.size(); ++i) {
    EXPECT_EQ(graphed.records[i].loss, eager.records[i].loss) << "step " << i;
  }
  EXPECT_EQ(std::memcmp(graphed.params.data(), eager.params.data(), eager.params.size() * sizeof(float)), 0);
}

#if defined(MICRODDP_TEST_CUDA_EMU)
// The step graph keeps the communication stream's priority (NCCL's kernels ahead of queued backward
// kernels): instantiated with cudaGraphInstantiateFlagUseNodePriority, counted by the emulated device.
// And a cuBLASLt that refuses every fused problem (the emulator's refusal table) trains the same bits
// eagerly and graphed: the fallback runs inside the capture too, with no cuBLASLt matmul at all.
TEST_P(DeviceTraining, GraphKeepsPrioritiesAndRefusedCublasLtFallsBackInIt) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  if (cpu_standin() || !is_stream_backend(GetParam())) GTEST_SKIP() << "graphs need a stream-ordered backend";
  struct Run {
    RunState state;
    cudaEmuCounters c;
  };
  auto run = [&](CudaGraphMode mode, const char* refusals) {
    EXPECT_EQ(cudaEmuSetLtRefusals(refusals), 0);
    TrainConfig cfg = gpu_config();
    cfg.steps = 4;
    cfg.cuda_graph = mode;
    auto ops = device_ops(gpu);
    auto comm = make_comm(GetParam());
    cudaEmuResetCounters();
    Trainer t(cfg, *comm, *ops);
    t.setup();
    std::vector<StepRecord> recs;
    while (t.steps_done() < cfg.steps) recs.push_back(t.step());
    Run r{snapshot(t, recs), {}};
    cudaEmuGetCounters(&r.c);
    EXPECT_EQ(cudaEmuSetLtRefusals(""), 0);
    return r;
  };
  const Run fused = run(CudaGraphMode::On, "");
  EXPECT_EQ(fused.c.graph_launches, 3u);
  EXPECT_EQ(fused.c.graph_priorities_dropped, 0u) << "the graph lost the communication stream's priority";
  EXPECT_GT(fused.c.lt_algo_matmuls, 0u);
  const Run eager = run(CudaGraphMode::Off, "all"), graphed = run(CudaGraphMode::On, "all");
  for (const Run* r : {&eager, &graphed}) {
    EXPECT_EQ(r->c.lt_matmuls, 0u);
    EXPECT_GT(r->c.lt_heuristic_empty, 0u);
  }
  EXPECT_EQ(graphed.c.graph_launches, 3u) << "the refused problems did not stop the capture";
  for (std::size_t i = 0; i < eager.state.records.size(); ++i) {
    EXPECT_EQ(graphed.state.records[i].loss, eager.state.records[i].loss) << "step " << i;
  }
  EXPECT_EQ(
      std::memcmp(graphed.state.params.data(), eager.state.params.data(), eager.state.params.size() * sizeof(float)),
      0);
}

// What the graph saves the host, counted by the emulated device over 4 steady-state steps of the
// bucketed default: the GEMMs, every forward/backward kernel and the optimizer leave the host (one
// graph launch per step replays them), the step still synchronises once, and the host launches only
// the batch: the synthetic set's two generator kernels (features, labels: gpu::synthetic_rows).
TEST_P(DeviceTraining, GraphedStepLaunchesOnTheEmulatedDevice) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  if (cpu_standin() || !is_stream_backend(GetParam())) GTEST_SKIP() << "graphs need a stream-ordered backend";
  auto count = [&](CudaGraphMode mode) {
    TrainConfig cfg = gpu_config();
    cfg.check_every = 0;
    cfg.sync_check_every = 0;
    cfg.steps = 8;
    cfg.cuda_graph = mode;
    auto ops = device_ops(gpu);
    auto comm = make_comm(GetParam());
    Trainer t(cfg, *comm, *ops);
    t.setup();
    t.step();
    t.step();
    ops->synchronize();
    cudaEmuResetCounters();
    for (int s = 0; s < 4; ++s) t.step();
    cudaEmuCounters c{};
    cudaEmuGetCounters(&c);
    return c;
  };
  const cudaEmuCounters eager = count(CudaGraphMode::Off), graphed = count(CudaGraphMode::On);
  const std::uint64_t eager_calls = eager.kernel_launches + eager.gemm_calls;
  const std::uint64_t graphed_calls = graphed.kernel_launches + graphed.gemm_calls;
  std::printf("[ launches ] %s, per step: eager %llu kernels + %llu GEMMs; graphed %llu kernels + %llu GEMMs "
              "from the host, 1 graph of %llu nodes\n",
              GetParam().c_str(), static_cast<unsigned long long>(eager.kernel_launches / 4),
              static_cast<unsigned long long>(eager.gemm_calls / 4),
              static_cast<unsigned long long>(graphed.kernel_launches / 4),
              static_cast<unsigned long long>(graphed.gemm_calls / 4),
              static_cast<unsigned long long>(graphed.graph_nodes / 4));
  EXPECT_EQ(eager.graph_launches, 0u);
  EXPECT_EQ(graphed.graph_launches, 4u) << "one replay per step";
  // The model's GEMMs per step, depth D: D + 1 forward (bias and ReLU in the cuBLASLt epilogue), D + 1
  // weight gradients (the bias gradient in the BGRADB epilogue), D input gradients (cuBLAS): 3D + 2,
  // 2D + 2 of them cuBLASLt (model/test_mlp_cuda.cpp counts the kernels around them).
  const auto depth = static_cast<std::uint64_t>(gpu_config().model.depth);
  EXPECT_EQ(eager.gemm_calls, 4 * (3 * depth + 2));
  EXPECT_EQ(eager.lt_matmuls, 4 * (2 * depth + 2)) << "the fused epilogues are what runs";
  EXPECT_EQ(graphed.gemm_calls, 0u) << "every GEMM is in the graph";
  EXPECT_EQ(graphed.graph_gemm_nodes, eager.gemm_calls) << "the graph replays the eager step's GEMMs";
  EXPECT_EQ(graphed.host_syncs, 4u) << "still one host synchronisation per step";
  EXPECT_EQ(graphed.kernel_launches, 4u * 2u) << "only the batch's two kernels per step come from the host";
  EXPECT_LT(graphed_calls * 5, eager_calls);
  EXPECT_EQ(graphed.device_allocations + graphed.pinned_allocations, 0u) << "a replay allocates nothing";
}

// GPU performance hygiene, asserted with the emulated device's counters (speed itself cannot be
// measured there): what a training step that does not log or check asks of the host.
//   * nccl, nccl-ring: exactly ONE host synchronisation per step (the verdict read-back), for every
//     strategy: the batch made on the device, the loss and verdict copied back asynchronously into
//     pinned memory, the compute stream (not the host) waits for the gradient collectives;
//   * no pageable copies, no host callbacks, no allocation in the step;
//   * nothing of the batch is uploaded: the synthetic batch is made on the device (its generator kernel);
//     a replayed step uploads only its optimizer's scalars (a few bytes from pinned memory);
//   * every parameter and gradient slice starts 256-byte aligned on the device.
// The host backends (mpi, hier) on device buffers stage every collective through the host
// (device_staging.hpp): 1 + 3 x (collectives + 1) synchronisations per step (34 for naive on this
// model, 7 for flat); they too allocate nothing and upload from pinned memory only.
TEST_P(DeviceTraining, StepHostTrafficOnTheEmulatedDevice) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  if (cpu_standin()) GTEST_SKIP() << "the CPU stand-in makes no CUDA calls: nothing for the emulator to count";
  const bool stream_ordered = is_stream_backend(GetParam());
  for (const char* strategy : {"naive", "flat", "overlap", "bucketed"}) {
    TrainConfig cfg = gpu_config();
    cfg.strategy = parse_strategy(strategy);
    cfg.check_every = 0;       // no divergence check inside the measured steps
    cfg.sync_check_every = 0;  // nor a desync check
    cfg.steps = 10;
    auto ops = device_ops(gpu);
    auto comm = make_comm(GetParam());
    Trainer t(cfg, *comm, *ops);
    t.setup();
    // The 256-byte alignment is the device allocator's (cudaMalloc); the CPU stand-in's buffers are
    // only 64-byte aligned by contract (cpu_ops.cpp), so there it held only by the heap's chance.
    for (const auto& p : cpu_standin() ? std::vector<model::ParamInfo>{} : t.model().params()) {
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.model().grad_data() + p.offset) % 256, 0u) << p.name;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.model().param_data() + p.offset) % 256, 0u) << p.name;
    }
    t.step();  // warm-up: staging and scratch buffers of the backends grow on first use
    t.step();
    ops->synchronize();
    cudaEmuResetCounters();
    constexpr int kSteps = 4;
    for (int s = 0; s < kSteps; ++s) t.step();
    cudaEmuCounters c{};
    cudaEmuGetCounters(&c);
    char report[2048];
    cudaEmuHostSyncReport(report, sizeof report);
    if (stream_ordered) {
      EXPECT_EQ(c.host_syncs, static_cast<std::uint64_t>(kSteps)) << strategy << ": host synchronisations\n" << report;
      // The synthetic batch is made on the device (ddp/direct_input.hpp): nothing of it is uploaded;
      // the replayed step's only upload is its optimizer's scalars (SGD's, staged per step).
      EXPECT_EQ(c.h2d_pinned_bytes, kSteps * sizeof(kernels::SgdParams)) << strategy;
      EXPECT_EQ(c.d2h_pageable_bytes, 0u) << strategy;
    } else {
      // Device staging (device_staging.hpp): per collective one device synchronisation and two
      // synchronous copies (to the host and back), for the gradients and the loss; plus the step's own.
      const auto per_step = static_cast<std::uint64_t>(1 + 3 * (t.sync().collectives_per_step() + 1));
      EXPECT_EQ(c.host_syncs, kSteps * per_step) << strategy << ": host synchronisations\n" << report;
    }
    EXPECT_EQ(c.h2d_pageable_bytes, 0u) << strategy;
    EXPECT_EQ(c.host_functions, 0u) << strategy;
    EXPECT_EQ(c.device_allocations, 0u) << strategy << ": the step allocates nothing";
    EXPECT_EQ(c.pinned_allocations, 0u) << strategy << ": the step allocates nothing";
  }
}

// The prefetched upload keeps the step at its one host synchronisation: the batch travels on the
// copy stream and the compute stream waits for its two events (stream waits, not host waits); it
// uploads exactly the rank's rows from pinned memory and allocates nothing. And it trains the same
// bits as filling on the step's thread (--prefetch 0).
TEST_P(DeviceTraining, PrefetchedUploadOnTheEmulatedDevice) {
  const int gpu = gpu_for(GetParam());
  if (gpu < 0) GTEST_SKIP() << "no GPU for backend " << GetParam() << " on every rank of this node";
  if (!is_stream_backend(GetParam())) GTEST_SKIP() << "host backends stage collectives: not the one-sync step";
  struct Counted {
    cudaEmuCounters c;
    std::string note;
    std::vector<float> params;
  };
  auto run = [&](std::int64_t prefetch) {
    TrainConfig cfg = gpu_config();
    cfg.check_every = 0;
    cfg.sync_check_every = 0;
    cfg.steps = 8;
    cfg.prefetch = prefetch;
    // No device generator, fill safe off the step's thread: a GPU run prefetches it.
    const auto source = microddp::testing::MemorySource::synthetic(99, 200, cfg.model.in_dim, cfg.model.classes);
    auto ops = device_ops(gpu);
    auto comm = make_comm(GetParam());
    Trainer t(cfg, *comm, *ops);
    const DataSourceLease lease = t.set_data_source(source);
    t.setup();
    t.step();
    t.step();
    ops->synchronize();
    cudaEmuResetCounters();
    for (int s = 0; s < 4; ++s) t.step();
    Counted r;
    cudaEmuGetCounters(&r.c);
    r.note = t.input_note();
    while (t.steps_done() < cfg.steps) t.step();
    r.params.resize(static_cast<std::size_t>(t.model().flat_count()));
    t.model().param_buffer().to_host(r.params.data(), 0, t.model().flat_count());
    return r;
  };
  const Counted direct = run(0), prefetched = run(2);
  EXPECT_EQ(prefetched.note, "prefetch 2");
  EXPECT_EQ(prefetched.c.host_syncs, 4u) << "one host synchronisation per step";
  EXPECT_EQ(prefetched.c.host_syncs, direct.c.host_syncs);
  EXPECT_EQ(prefetched.c.stream_event_waits, direct.c.stream_event_waits + 2 * 4) << "wait_for_upload: 2 per step";
  const data::Sampler sampler(gpu_config().global_batch, microddp::testing::runtime().rank(),
                              microddp::testing::runtime().size());
  const auto bytes = static_cast<std::uint64_t>(sampler.local_count() * (gpu_config().model.in_dim * 4 + 4));
  EXPECT_EQ(prefetched.c.h2d_pinned_bytes, 4 * (bytes + sizeof(kernels::SgdParams)))
      << "the rank's rows and labels, from pinned slots (and the replayed optimizer's scalars)";
  EXPECT_EQ(prefetched.c.h2d_pageable_bytes, 0u);
  EXPECT_EQ(prefetched.c.device_allocations + prefetched.c.pinned_allocations, 0u) << "the step allocates nothing";
  ASSERT_EQ(prefetched.params.size(), direct.params.size());
  EXPECT_EQ(std::memcmp(prefetched.params.data(), direct.params.data(), direct.params.size() * sizeof(float)), 0);
}
#endif

INSTANTIATE_TEST_SUITE_P(Backends, DeviceTraining, ::testing::ValuesIn(device_backends()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace microddp::ddp
