// test_graphs.cu — stream capture and CUDA graphs on the emulated device (docs/cuda_emu.md, "Graphs"):
//   * a capture records kernels, cuBLAS GEMMs, copies and memsets (device and pinned memory) and host
//     functions without running them, and a launch replays them bitwise as eager execution computes
//     them, counted apart from launches issued by the host;
//   * arguments are captured by value and pointers as pointers: a relaunch reads the buffers' current
//     contents; a launch is one stream operation, ordered behind the previous launch of its graph;
//   * fork/join across two streams through events, in every schedule; a missing edge shows under
//     the reverse schedule; a fork that is never joined back fails cudaStreamEndCapture;
//   * every call a capture cannot hold is refused with CUDA's error and invalidates the capture;
//     the capture modes (global, thread-local, relaxed) decide which threads may allocate;
//   * external event record and wait nodes, child graphs, the state errors, and the destroy paths.
// Compiled as kernel source (device prelude), kernels launched with the product's MDDP_LAUNCH.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "emu_test_util.hpp"
#include "kernels/cuda/launch.hpp"

namespace cuda_emu::test {
namespace {

// ---- kernels ------------------------------------------------------------------------------------
__global__ void scale_add(const float* x, float a, float b, float* y, int n) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    y[i] = a * x[i] + b;
  }
}

// out[blockIdx.x] = a tree sum of the block's grid-stride share of x (needs its barriers: fibers).
__global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float partial[256];
  float s = 0.0f;
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    s += x[i];
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

__global__ void combine(const float* p, const float* q, float* out, int n) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    out[i] = p[i] + 2.0f * q[i];
  }
}

constexpr int kN = 4096 + 17;  // not a multiple of any block size
constexpr int kSums = 16;      // block_sum's blocks
constexpr int kDim = 16;       // the GEMM is kDim x kDim x kDim
constexpr std::size_t kBytes = kN * sizeof(float);

void launch_scale_add(const float* x, float a, float b, float* y, cudaStream_t s) {
  MDDP_LAUNCH(scale_add, 8, 128, 0, s)(x, a, b, y, kN);
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(gen);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class Graphs : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, cudaEmuSetSchedule("shuffle"));
    cudaEmuSetStreamDelayUs(0);
    EMU_CHECK(cudaStreamCreateWithFlags(&s1_, cudaStreamNonBlocking));
    EMU_CHECK(cudaStreamCreateWithFlags(&s2_, cudaStreamNonBlocking));
    EMU_CHECK(cudaStreamCreateWithFlags(&blocking_, cudaStreamDefault));
    for (cudaEvent_t* e : {&fork_, &join_, &other_}) EMU_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    EMU_CHECK(cudaMallocHost(&pinned_, 64 * sizeof(float)));
    x_.upload(random_floats(kN, 27));
  }
  void TearDown() override {
    EXPECT_EQ(0, cudaEmuSetSchedule("shuffle"));
    (void)cudaGetLastError();
    EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
    for (cudaStream_t s : {s1_, s2_, blocking_}) EXPECT_EQ(cudaSuccess, cudaStreamDestroy(s));
    for (cudaEvent_t e : {fork_, join_, other_}) EXPECT_EQ(cudaSuccess, cudaEventDestroy(e));
    EXPECT_EQ(cudaSuccess, cudaFreeHost(pinned_));
  }

  // Ends the capture of s1_ successfully and instantiates it.
  cudaGraphExec_t end_and_instantiate(cudaStream_t s, cudaGraph_t* graph_out = nullptr) {
    cudaGraph_t g = nullptr;
    EXPECT_EQ(cudaSuccess, cudaStreamEndCapture(s, &g));
    EXPECT_NE(g, nullptr);
    cudaGraphExec_t exec = nullptr;
    EXPECT_EQ(cudaSuccess, cudaGraphInstantiate(&exec, g, 0));
    if (graph_out != nullptr) {
      *graph_out = g;
    } else {
      EXPECT_EQ(cudaSuccess, cudaGraphDestroy(g));  // the executable graph keeps its own copy
    }
    return exec;
  }

  void poison(const DeviceBuffer<float>& b) {
    ASSERT_EQ(cudaSuccess, cudaMemset(b.get(), 0xFF, b.bytes()));
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  }

  cudaStream_t s1_ = nullptr, s2_ = nullptr, blocking_ = nullptr;
  cudaEvent_t fork_ = nullptr, join_ = nullptr, other_ = nullptr;
  float* pinned_ = nullptr;
  DeviceBuffer<float> x_{kN};
};

// ---- replay -------------------------------------------------------------------------------------

struct Step {
  DeviceBuffer<float> y{kN}, z{kN}, sums{kSums}, c{kDim * kDim};
  std::atomic<int> host_calls{0};
};

// One step of every kind a capture records: memset, kernels (one with barriers), a GEMM, copies
// device -> device and device -> pinned, a host function.
void issue_step(Step& st, const float* x, float* pinned, cudaStream_t s, cublasHandle_t h) {
  const float one = 1.0f, zero = 0.0f;
  EXPECT_EQ(cudaSuccess, cudaMemsetAsync(st.y.get(), 0, kBytes, s));
  launch_scale_add(x, 1.5f, 0.25f, st.y.get(), s);
  EXPECT_EQ(CUBLAS_STATUS_SUCCESS, cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, kDim, kDim, kDim, &one, st.y.get(), kDim, x,
                                               kDim, &zero, st.c.get(), kDim));
  MDDP_LAUNCH(block_sum, kSums, 256, 0, s)(st.y.get(), st.sums.get(), kN);
  EXPECT_EQ(cudaSuccess, cudaMemcpyAsync(st.z.get(), st.y.get(), kBytes, cudaMemcpyDeviceToDevice, s));
  launch_scale_add(st.z.get(), -1.0f, 0.0f, st.z.get(), s);
  EXPECT_EQ(cudaSuccess, cudaMemcpyAsync(pinned, st.sums.get(), kSums * sizeof(float), cudaMemcpyDeviceToHost, s));
  EXPECT_EQ(cudaSuccess, cudaLaunchHostFunc(
                             s, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, &st.host_calls));
}

struct StepResult {
  std::vector<float> y, z, sums, c, pinned;
};

StepResult read_step(Step& st, const float* pinned) {
  return {st.y.download(), st.z.download(), st.sums.download(), st.c.download(),
          std::vector<float>(pinned, pinned + kSums)};
}

void expect_same(const StepResult& got, const StepResult& want) {
  EXPECT_TRUE(same_bits(got.y, want.y));
  EXPECT_TRUE(same_bits(got.z, want.z));
  EXPECT_TRUE(same_bits(got.sums, want.sums));
  EXPECT_TRUE(same_bits(got.c, want.c));
  EXPECT_TRUE(same_bits(got.pinned, want.pinned));
}

TEST_F(Graphs, CaptureRecordsWithoutRunningAndLaunchesReplayBitwise) {
  cublasHandle_t h = nullptr;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasCreate(&h));
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasSetStream(h, s1_));
  Step st;
  issue_step(st, x_.get(), pinned_, s1_, h);
  EMU_CHECK(cudaStreamSynchronize(s1_));
  const StepResult eager = read_step(st, pinned_);
  ASSERT_EQ(st.host_calls.load(), 1);

  for (const auto* b : {&st.y, &st.z, &st.sums, &st.c}) poison(*b);
  std::memset(pinned_, 0xFF, kSums * sizeof(float));
  cudaEmuResetCounters();
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  issue_step(st, x_.get(), pinned_, s1_, h);
  cudaGraph_t graph = nullptr;
  const cudaGraphExec_t exec = end_and_instantiate(s1_, &graph);
  // Nothing ran: the host function did not, the pinned bytes are untouched, nothing was launched.
  EMU_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(st.host_calls.load(), 1);
  EXPECT_TRUE(std::isnan(pinned_[0]));
  cudaEmuCounters c = counters();
  EXPECT_EQ(c.captured_operations, 8u);
  EXPECT_EQ(c.kernel_launches + c.gemm_calls + c.host_functions + c.graph_launches, 0u);
  EXPECT_EQ(c.memset_bytes + c.d2d_bytes + c.d2h_pinned_bytes, 0u);

  // The nodes, in capture order: what each operation is on a GPU (cuBLAS runs a kernel).
  std::size_t count = 0;
  EMU_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  ASSERT_EQ(count, 8u);
  std::vector<cudaGraphNode_t> nodes(count);
  EMU_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  const cudaGraphNodeType want[] = {cudaGraphNodeTypeMemset, cudaGraphNodeTypeKernel, cudaGraphNodeTypeKernel,
                                    cudaGraphNodeTypeKernel, cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeKernel,
                                    cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeHost};
  for (std::size_t i = 0; i < count; ++i) {
    cudaGraphNodeType type{};
    EMU_CHECK(cudaGraphNodeGetType(nodes[i], &type));
    EXPECT_EQ(type, want[i]) << "node " << i;
  }
  EMU_CHECK(cudaGraphDestroy(graph));

  constexpr int kLaunches = 3;
  for (int launch = 1; launch <= kLaunches; ++launch) {
    EMU_CHECK(cudaGraphLaunch(exec, s1_));
    EMU_CHECK(cudaStreamSynchronize(s1_));
    expect_same(read_step(st, pinned_), eager);
    EXPECT_EQ(st.host_calls.load(), 1 + launch);
  }
  c = counters();
  EXPECT_EQ(c.graph_launches, static_cast<std::uint64_t>(kLaunches));
  EXPECT_EQ(c.graph_nodes, 8u * kLaunches);
  EXPECT_EQ(c.graph_kernel_nodes, 3u * kLaunches);
  EXPECT_EQ(c.graph_gemm_nodes, 1u * kLaunches);
  EXPECT_EQ(c.kernel_launches + c.gemm_calls + c.host_functions, 0u) << "replays are not launches from the host";
  EXPECT_EQ(c.memset_bytes, kBytes * kLaunches);
  EXPECT_EQ(c.d2h_pinned_bytes, kSums * sizeof(float) * kLaunches);
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EXPECT_EQ(CUBLAS_STATUS_SUCCESS, cublasDestroy(h));
}

TEST_F(Graphs, RelaunchReadsTheBuffersNowWithTheArgumentsOfTheCapture) {
  DeviceBuffer<float> y(kN);
  float a = 2.0f;
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  launch_scale_add(x_.get(), a, 0.0f, y.get(), s1_);
  const cudaGraphExec_t exec = end_and_instantiate(s1_);
  a = 3.0f;  // kernel arguments were copied at the capture, as at any launch
  for (unsigned seed : {5u, 6u}) {
    const std::vector<float> x = random_floats(kN, seed);
    x_.upload(x);  // new contents, same pointer
    EMU_CHECK(cudaGraphLaunch(exec, s1_));
    EMU_CHECK(cudaStreamSynchronize(s1_));
    const std::vector<float> got = y.download();
    for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], 2.0f * x[i]) << "seed " << seed << ", element " << i;
  }
  EMU_CHECK(cudaGraphExecDestroy(exec));
}

TEST_F(Graphs, ALaunchIsOneStreamOperationOrderedBehindTheGraphsPreviousLaunch) {
  DeviceBuffer<float> y(kN);
  poison(y);
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  launch_scale_add(x_.get(), 4.0f, 0.0f, y.get(), s1_);
  const cudaGraphExec_t exec = end_and_instantiate(s1_);
  Gate gate;
  gate.enqueue(s2_);
  EMU_CHECK(cudaGraphLaunch(exec, s2_));
  // Later work on the stream waits for the whole graph.
  EMU_CHECK(cudaMemcpyAsync(pinned_, y.get(), sizeof(float), cudaMemcpyDeviceToHost, s2_));
  // A launch on another stream waits for the launch before it, which waits for the gate.
  EMU_CHECK(cudaGraphLaunch(exec, blocking_));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(blocking_));
  (void)cudaGetLastError();
  EXPECT_TRUE(std::isnan(pinned_[0]));
  gate.open();
  EMU_CHECK(cudaStreamSynchronize(s2_));
  EMU_CHECK(cudaStreamSynchronize(blocking_));
  const std::vector<float> x = x_.download();
  EXPECT_EQ(pinned_[0], 4.0f * x[0]);
  EMU_CHECK(cudaGraphExecDestroy(exec));
}

// ---- two streams --------------------------------------------------------------------------------

struct ForkJoin {
  DeviceBuffer<float> a{kN}, b{kN}, c{kN}, d{kN};
};

// a = 2x + 1 (s1); fork; b = 3a (s2) while c = 5 - a (s1); join; d = b + 2c (s1).
void issue_fork_join(ForkJoin& f, const float* x, cudaStream_t s1, cudaStream_t s2, cudaEvent_t fork,
                     cudaEvent_t join) {
  launch_scale_add(x, 2.0f, 1.0f, f.a.get(), s1);
  EXPECT_EQ(cudaSuccess, cudaEventRecord(fork, s1));
  EXPECT_EQ(cudaSuccess, cudaStreamWaitEvent(s2, fork, 0));
  launch_scale_add(f.a.get(), 3.0f, 0.0f, f.b.get(), s2);
  launch_scale_add(f.a.get(), -1.0f, 5.0f, f.c.get(), s1);
  EXPECT_EQ(cudaSuccess, cudaEventRecord(join, s2));
  EXPECT_EQ(cudaSuccess, cudaStreamWaitEvent(s1, join, 0));
  MDDP_LAUNCH(combine, 8, 128, 0, s1)(f.b.get(), f.c.get(), f.d.get(), kN);
}

TEST_F(Graphs, ForkAndJoinAcrossTwoStreamsReplayInEverySchedule) {
  ForkJoin f;
  issue_fork_join(f, x_.get(), s1_, s2_, fork_, join_);
  EMU_CHECK(cudaDeviceSynchronize());
  const std::vector<float> want = f.d.download();

  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  launch_scale_add(x_.get(), 2.0f, 1.0f, f.a.get(), s1_);
  EMU_CHECK(cudaEventRecord(fork_, s1_));
  EMU_CHECK(cudaStreamWaitEvent(s2_, fork_, 0));
  // s2 joined the capture: same sequence id, and its next node depends on s1's kernel.
  cudaStreamCaptureStatus st1{}, st2{};
  unsigned long long id1 = 0, id2 = 0;
  const cudaGraphNode_t* deps = nullptr;
  std::size_t ndeps = 0;
  EMU_CHECK(cudaStreamGetCaptureInfo(s1_, &st1, &id1));
  EMU_CHECK(cudaStreamGetCaptureInfo(s2_, &st2, &id2, nullptr, &deps, nullptr, &ndeps));
  EXPECT_EQ(st1, cudaStreamCaptureStatusActive);
  EXPECT_EQ(st2, cudaStreamCaptureStatusActive);
  EXPECT_EQ(id1, id2);
  EXPECT_EQ(ndeps, 1u);
  launch_scale_add(f.a.get(), 3.0f, 0.0f, f.b.get(), s2_);
  launch_scale_add(f.a.get(), -1.0f, 5.0f, f.c.get(), s1_);
  EMU_CHECK(cudaEventRecord(join_, s2_));
  EMU_CHECK(cudaStreamWaitEvent(s1_, join_, 0));
  MDDP_LAUNCH(combine, 8, 128, 0, s1_)(f.b.get(), f.c.get(), f.d.get(), kN);
  cudaGraph_t graph = nullptr;
  const cudaGraphExec_t exec = end_and_instantiate(s1_, &graph);
  std::size_t count = 0;
  EMU_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  EXPECT_EQ(count, 4u) << "events are edges, not nodes";
  EMU_CHECK(cudaGraphDestroy(graph));
  EMU_CHECK(cudaStreamIsCapturing(s2_, &st2));
  EXPECT_EQ(st2, cudaStreamCaptureStatusNone) << "the end of the capture releases every stream in it";

  for (const char* schedule : {"forward", "reverse", "shuffle:1", "shuffle:2", "shuffle:3"}) {
    ASSERT_EQ(0, cudaEmuSetSchedule(schedule));
    for (const auto* b : {&f.a, &f.b, &f.c, &f.d}) poison(*b);
    EMU_CHECK(cudaGraphLaunch(exec, s2_));  // any stream
    EMU_CHECK(cudaStreamSynchronize(s2_));
    EXPECT_TRUE(same_bits(f.d.download(), want)) << schedule;
  }
  EMU_CHECK(cudaGraphExecDestroy(exec));
}

TEST_F(Graphs, AMissingEdgeBetweenBranchesShowsUnderTheReverseSchedule) {
  ForkJoin f;
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  EMU_CHECK(cudaEventRecord(fork_, s1_));  // a bug: the fork is recorded before the kernel s2 needs
  EMU_CHECK(cudaStreamWaitEvent(s2_, fork_, 0));
  launch_scale_add(x_.get(), 2.0f, 1.0f, f.a.get(), s1_);
  launch_scale_add(f.a.get(), 3.0f, 0.0f, f.b.get(), s2_);
  EMU_CHECK(cudaEventRecord(join_, s2_));
  EMU_CHECK(cudaStreamWaitEvent(s1_, join_, 0));
  const cudaGraphExec_t exec = end_and_instantiate(s1_);
  const std::vector<float> x = x_.download();
  for (const char* schedule : {"forward", "reverse"}) {
    ASSERT_EQ(0, cudaEmuSetSchedule(schedule));
    for (const auto* b : {&f.a, &f.b}) poison(*b);
    EMU_CHECK(cudaGraphLaunch(exec, s1_));
    EMU_CHECK(cudaStreamSynchronize(s1_));
    const float b0 = f.b.download()[0];
    if (std::string(schedule) == "forward") {
      EXPECT_EQ(b0, 3.0f * (2.0f * x[0] + 1.0f)) << "capture order happens to be right";
    } else {
      EXPECT_TRUE(std::isnan(b0)) << "the reverse schedule runs s2's kernel before the one it reads";
    }
  }
  EMU_CHECK(cudaGraphExecDestroy(exec));
}

TEST_F(Graphs, AForkThatIsNotJoinedBackFailsTheCapture) {
  ForkJoin f;
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  launch_scale_add(x_.get(), 2.0f, 1.0f, f.a.get(), s1_);
  EMU_CHECK(cudaEventRecord(fork_, s1_));
  EMU_CHECK(cudaStreamWaitEvent(s2_, fork_, 0));
  launch_scale_add(f.a.get(), 3.0f, 0.0f, f.b.get(), s2_);
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureUnmatched, cudaStreamEndCapture(s2_, &g)) << "ended where it did not begin";
  EXPECT_EQ(cudaErrorStreamCaptureUnjoined, cudaStreamEndCapture(s1_, &g));
  EXPECT_EQ(g, nullptr);
  (void)cudaGetLastError();
  for (cudaStream_t s : {s1_, s2_}) {
    cudaStreamCaptureStatus st{};
    EMU_CHECK(cudaStreamIsCapturing(s, &st));
    EXPECT_EQ(st, cudaStreamCaptureStatusNone);
  }
  launch_scale_add(x_.get(), 1.0f, 0.0f, f.b.get(), s2_);  // both streams run work again
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaStreamSynchronize(s2_));
}

// ---- refusals -----------------------------------------------------------------------------------

struct Refusal {
  const char* name;
  cudaError_t error;
  bool blocking;  // capture on a blocking stream (the legacy stream's rule)
  std::function<cudaError_t(cudaStream_t capturing)> call;
};

TEST_F(Graphs, EveryCallACaptureCannotHoldIsRefusedAndInvalidatesIt) {
  DeviceBuffer<float> y(kN);
  std::vector<float> pageable(kN, 1.0f);
  cudaEvent_t captured = nullptr, outside = nullptr;
  EMU_CHECK(cudaEventCreate(&captured));
  EMU_CHECK(cudaEventCreate(&outside));
  EMU_CHECK(cudaEventRecord(outside, s2_));
  void* spare_device = nullptr;
  void* spare_pinned = nullptr;
  const std::vector<Refusal> cases = {
      {"cudaStreamSynchronize", cudaErrorStreamCaptureUnsupported, false,
       [](cudaStream_t s) { return cudaStreamSynchronize(s); }},
      {"cudaStreamQuery", cudaErrorStreamCaptureUnsupported, false, [](cudaStream_t s) { return cudaStreamQuery(s); }},
      {"cudaDeviceSynchronize", cudaErrorStreamCaptureUnsupported, false,
       [](cudaStream_t) { return cudaDeviceSynchronize(); }},
      {"cudaEventSynchronize of a captured event", cudaErrorCapturedEvent, false,
       [&](cudaStream_t) { return cudaEventSynchronize(captured); }},
      {"cudaEventQuery of a captured event", cudaErrorCapturedEvent, false,
       [&](cudaStream_t) { return cudaEventQuery(captured); }},
      {"cudaMemcpy (synchronous)", cudaErrorStreamCaptureUnsupported, false,
       [&](cudaStream_t) { return cudaMemcpy(pinned_, y.get(), sizeof(float), cudaMemcpyDeviceToHost); }},
      {"cudaMemcpyAsync to pageable memory", cudaErrorStreamCaptureUnsupported, false,
       [&](cudaStream_t s) { return cudaMemcpyAsync(pageable.data(), y.get(), kBytes, cudaMemcpyDeviceToHost, s); }},
      {"cudaMemcpyAsync from pageable memory", cudaErrorStreamCaptureUnsupported, false,
       [&](cudaStream_t s) { return cudaMemcpyAsync(y.get(), pageable.data(), kBytes, cudaMemcpyHostToDevice, s); }},
      {"cudaMalloc", cudaErrorStreamCaptureUnsupported, false,
       [&](cudaStream_t) { return cudaMalloc(&spare_device, 256); }},
      {"cudaMallocHost", cudaErrorStreamCaptureUnsupported, false,
       [&](cudaStream_t) { return cudaMallocHost(&spare_pinned, 256); }},
      {"cudaFree", cudaErrorStreamCaptureUnsupported, false, [&](cudaStream_t) { return cudaFree(y.get()); }},
      {"cudaFreeHost", cudaErrorStreamCaptureUnsupported, false, [&](cudaStream_t) { return cudaFreeHost(pinned_); }},
      {"cudaMallocAsync", cudaErrorStreamCaptureUnsupported, false,
       [&](cudaStream_t s) { return cudaMallocAsync(&spare_device, 256, s); }},
      {"cudaStreamWaitEvent on an event recorded outside the capture", cudaErrorStreamCaptureIsolation, false,
       [&](cudaStream_t s) { return cudaStreamWaitEvent(s, outside, 0); }},
      {"cudaStreamDestroy", cudaErrorStreamCaptureUnsupported, false,
       [](cudaStream_t s) { return cudaStreamDestroy(s); }},
      {"the legacy stream during a blocking stream's capture", cudaErrorStreamCaptureImplicit, true,
       [&](cudaStream_t) { return cudaMemsetAsync(y.get(), 0, kBytes, nullptr); }},
      {"cudaMemcpy during a blocking stream's capture", cudaErrorStreamCaptureImplicit, true,
       [&](cudaStream_t) { return cudaMemcpy(y.get(), y.get(), kBytes, cudaMemcpyDeviceToDevice); }},
  };
  for (const Refusal& r : cases) {
    SCOPED_TRACE(r.name);
    const cudaStream_t s = r.blocking ? blocking_ : s1_;
    EMU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    launch_scale_add(x_.get(), 1.0f, 0.0f, y.get(), s);
    EMU_CHECK(cudaGetLastError());
    EMU_CHECK(cudaEventRecord(captured, s));
    EXPECT_EQ(r.error, r.call(s));
    cudaStreamCaptureStatus st{};
    EMU_CHECK(cudaStreamIsCapturing(s, &st));
    EXPECT_EQ(st, cudaStreamCaptureStatusInvalidated);
    (void)cudaGetLastError();
    launch_scale_add(x_.get(), 1.0f, 0.0f, y.get(), s);
    EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaGetLastError()) << "every later operation fails";
    cudaGraph_t g = reinterpret_cast<cudaGraph_t>(&st);
    EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
    EXPECT_EQ(g, nullptr);
    EMU_CHECK(cudaStreamIsCapturing(s, &st));
    EXPECT_EQ(st, cudaStreamCaptureStatusNone);
    (void)cudaGetLastError();
    // The stream works again, eagerly, and the event can be recorded and waited for.
    launch_scale_add(x_.get(), 1.0f, 0.0f, y.get(), s);
    EMU_CHECK(cudaEventRecord(captured, s));
    EMU_CHECK(cudaEventSynchronize(captured));
  }
  EXPECT_EQ(spare_device, nullptr);
  EXPECT_EQ(spare_pinned, nullptr);
  EMU_CHECK(cudaEventDestroy(captured));
  EMU_CHECK(cudaEventDestroy(outside));
}

TEST_F(Graphs, WaitingOnAnotherCapturesEventMergesAndInvalidatesBoth) {
  DeviceBuffer<float> y(kN);
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  EMU_CHECK(cudaStreamBeginCapture(s2_, cudaStreamCaptureModeGlobal));
  launch_scale_add(x_.get(), 1.0f, 0.0f, y.get(), s2_);
  EMU_CHECK(cudaEventRecord(other_, s2_));
  EXPECT_EQ(cudaErrorStreamCaptureMerge, cudaStreamWaitEvent(s1_, other_, 0));
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s1_, &g));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s2_, &g));
  (void)cudaGetLastError();
}

TEST_F(Graphs, CaptureModesDecideWhoMayMakePotentiallyUnsafeCalls) {
  // Relaxed: the capturing thread itself may allocate.
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeRelaxed));
  void* p = nullptr;
  EMU_CHECK(cudaMalloc(&p, 256));
  EMU_CHECK(cudaFree(p));
  cudaGraph_t g = nullptr;
  EMU_CHECK(cudaStreamEndCapture(s1_, &g));
  EMU_CHECK(cudaGraphDestroy(g));

  const auto other_thread_malloc = [](cudaStreamCaptureMode thread_mode) {
    cudaError_t e = cudaSuccess;
    std::thread t([&] {
      cudaStreamCaptureMode m = thread_mode;
      (void)cudaThreadExchangeStreamCaptureMode(&m);
      void* q = nullptr;
      e = cudaMalloc(&q, 256);
      if (e == cudaSuccess) (void)cudaFree(q);
    });
    t.join();
    return e;
  };
  // Thread-local: another thread is not held back.
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeThreadLocal));
  EXPECT_EQ(cudaSuccess, other_thread_malloc(cudaStreamCaptureModeGlobal));
  EMU_CHECK(cudaStreamEndCapture(s1_, &g));
  EMU_CHECK(cudaGraphDestroy(g));
  // Global: another thread in global mode is, and its call invalidates the capture; one that
  // switched itself to relaxed mode is not.
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaSuccess, other_thread_malloc(cudaStreamCaptureModeRelaxed));
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, other_thread_malloc(cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s1_, &g));
  (void)cudaGetLastError();
  // A non-relaxed capture must be ended by the thread that began it; a relaxed one by any.
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  std::thread([&] { EXPECT_EQ(cudaErrorStreamCaptureWrongThread, cudaStreamEndCapture(s1_, &g)); }).join();
  EMU_CHECK(cudaStreamEndCapture(s1_, &g));
  EMU_CHECK(cudaGraphDestroy(g));
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeRelaxed));
  std::thread([&] { EXPECT_EQ(cudaSuccess, cudaStreamEndCapture(s1_, &g)); }).join();
  EMU_CHECK(cudaGraphDestroy(g));
}

TEST_F(Graphs, CaptureStateErrors) {
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaErrorInvalidValue, cudaStreamBeginCapture(s1_, static_cast<cudaStreamCaptureMode>(3)));
  EXPECT_EQ(cudaErrorIllegalState, cudaStreamEndCapture(s1_, &g)) << "not capturing";
  EMU_CHECK(cudaStreamBeginCapture(blocking_, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaErrorIllegalState, cudaStreamBeginCapture(blocking_, cudaStreamCaptureModeGlobal));
  // The legacy stream's status cannot be asked while a blocking stream captures; the capture lives on.
  cudaStreamCaptureStatus st{};
  EXPECT_EQ(cudaErrorStreamCaptureImplicit, cudaStreamIsCapturing(nullptr, &st));
  EMU_CHECK(cudaStreamIsCapturing(blocking_, &st));
  EXPECT_EQ(st, cudaStreamCaptureStatusActive);
  cudaGraph_t in_progress = nullptr;
  EMU_CHECK(cudaStreamGetCaptureInfo(blocking_, &st, nullptr, &in_progress));
  ASSERT_NE(in_progress, nullptr);
  EXPECT_EQ(cudaErrorIllegalState, cudaGraphDestroy(in_progress)) << "owned by the capture until it ends";
  EMU_CHECK(cudaStreamEndCapture(blocking_, &g));
  EXPECT_EQ(g, in_progress);
  std::size_t count = 1;
  EMU_CHECK(cudaGraphGetNodes(g, nullptr, &count));
  EXPECT_EQ(count, 0u);
  cudaGraphExec_t exec = nullptr;
  EXPECT_EQ(cudaErrorNotSupported, cudaGraphInstantiate(&exec, g, cudaGraphInstantiateFlagDeviceLaunch));
  EXPECT_EQ(cudaErrorInvalidValue, cudaGraphInstantiate(&exec, g, cudaGraphInstantiateFlagUpload));
  EXPECT_EQ(cudaErrorInvalidValue, cudaGraphInstantiate(&exec, nullptr, 0));
  EMU_CHECK(cudaGraphInstantiateWithFlags(&exec, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  EMU_CHECK(cudaGraphLaunch(exec, s1_));  // an empty graph is a launch that does nothing
  EMU_CHECK(cudaStreamSynchronize(s1_));
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EMU_CHECK(cudaGraphDestroy(g));
  (void)cudaGetLastError();
}

// A node remembers its stream's priority; instantiating without cudaGraphInstantiateFlagUseNodePriority
// drops it (a graph then runs every node at its launch stream's priority), which the emulator counts:
// a forked high-priority stream (NCCL's communication stream) loses its priority inside such a graph.
TEST_F(Graphs, InstantiatingWithoutNodePriorityIsCountedWhenAPriorityIsLost) {
  int least = 0, greatest = 0;
  EMU_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t urgent = nullptr;
  EMU_CHECK(cudaStreamCreateWithPriority(&urgent, cudaStreamNonBlocking, greatest));
  auto capture = [&](bool fork_urgent) {
    cudaGraph_t g = nullptr;
    EXPECT_EQ(cudaSuccess, cudaStreamBeginCapture(s1_, cudaStreamCaptureModeThreadLocal));
    launch_scale_add(x_.get(), 1.0f, 0.0f, x_.get(), s1_);
    if (fork_urgent) {
      EXPECT_EQ(cudaSuccess, cudaEventRecord(fork_, s1_));
      EXPECT_EQ(cudaSuccess, cudaStreamWaitEvent(urgent, fork_, 0));
      launch_scale_add(x_.get(), 1.0f, 0.0f, x_.get(), urgent);
      EXPECT_EQ(cudaSuccess, cudaEventRecord(join_, urgent));
      EXPECT_EQ(cudaSuccess, cudaStreamWaitEvent(s1_, join_, 0));
    }
    EXPECT_EQ(cudaSuccess, cudaStreamEndCapture(s1_, &g));
    return g;
  };
  struct Case {
    bool fork_urgent;
    unsigned long long flags;
    std::uint64_t dropped;
  };
  for (const Case c : {Case{false, 0, 0}, Case{true, 0, 1}, Case{true, cudaGraphInstantiateFlagUseNodePriority, 0}}) {
    cudaGraph_t g = capture(c.fork_urgent);
    cudaEmuResetCounters();
    cudaGraphExec_t exec = nullptr;
    EMU_CHECK(cudaGraphInstantiate(&exec, g, c.flags));
    cudaEmuCounters counted{};
    cudaEmuGetCounters(&counted);
    EXPECT_EQ(counted.graph_priorities_dropped, c.dropped) << "fork " << c.fork_urgent << " flags " << c.flags;
    EMU_CHECK(cudaGraphExecDestroy(exec));
    EMU_CHECK(cudaGraphDestroy(g));
  }
  EMU_CHECK(cudaStreamDestroy(urgent));
}

// ---- events, child graphs -----------------------------------------------------------------------

TEST_F(Graphs, ExternalEventRecordAndWaitNodesActAtEveryLaunch) {
  DeviceBuffer<float> y(kN);
  poison(y);
  cudaEvent_t done = nullptr;
  EMU_CHECK(cudaEventCreate(&done));  // with timing
  // The graph waits for whatever `other_` holds when it is launched, and records `done` at its end.
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  EMU_CHECK(cudaStreamWaitEvent(s1_, other_, cudaEventWaitExternal));
  launch_scale_add(x_.get(), 5.0f, 0.0f, y.get(), s1_);
  EMU_CHECK(cudaMemcpyAsync(pinned_, y.get(), sizeof(float), cudaMemcpyDeviceToHost, s1_));
  EMU_CHECK(cudaEventRecordWithFlags(done, s1_, cudaEventRecordExternal));
  cudaGraph_t graph = nullptr;
  const cudaGraphExec_t exec = end_and_instantiate(s1_, &graph);
  std::size_t count = 0;
  EMU_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  EXPECT_EQ(count, 4u);
  EMU_CHECK(cudaGraphDestroy(graph));
  EXPECT_EQ(cudaErrorCapturedEvent, cudaEventQuery(done)) << "recorded in a capture, not yet by a launch";
  (void)cudaGetLastError();
  std::memset(pinned_, 0xFF, sizeof(float));
  for (int launch = 0; launch < 2; ++launch) {
    Gate gate;
    gate.enqueue(s2_);
    EMU_CHECK(cudaEventRecord(other_, s2_));
    EMU_CHECK(cudaGraphLaunch(exec, s1_));
    EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(done)) << "the launch waits for the gated event";
    (void)cudaGetLastError();
    EXPECT_TRUE(std::isnan(pinned_[0]));
    gate.open();
    EMU_CHECK(cudaEventSynchronize(done));
    EXPECT_EQ(pinned_[0], 5.0f * x_.download()[0]);
    std::memset(pinned_, 0xFF, sizeof(float));
  }
  float ms = -1.0f;
  cudaEvent_t later = nullptr;
  EMU_CHECK(cudaEventCreate(&later));
  EMU_CHECK(cudaEventRecord(later, s1_));
  EMU_CHECK(cudaEventSynchronize(later));
  EMU_CHECK(cudaEventElapsedTime(&ms, done, later));
  EXPECT_GE(ms, 0.0f);
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EMU_CHECK(cudaEventDestroy(done));
  EMU_CHECK(cudaEventDestroy(later));
}

TEST_F(Graphs, AGraphLaunchedIntoACaptureBecomesAChildGraph) {
  DeviceBuffer<float> y(kN), z(kN);
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  launch_scale_add(x_.get(), 2.0f, 0.0f, y.get(), s1_);
  const cudaGraphExec_t inner = end_and_instantiate(s1_);
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  EMU_CHECK(cudaGraphLaunch(inner, s1_));
  launch_scale_add(y.get(), 3.0f, 0.0f, z.get(), s1_);
  const cudaGraphExec_t outer = end_and_instantiate(s1_);
  cudaEmuResetCounters();
  EMU_CHECK(cudaGraphLaunch(outer, s1_));
  EMU_CHECK(cudaStreamSynchronize(s1_));
  EXPECT_EQ(counters().graph_launches, 1u);
  EXPECT_EQ(counters().graph_kernel_nodes, 2u);
  const std::vector<float> x = x_.download(), got = z.download();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], 3.0f * (2.0f * x[i])) << i;
  EMU_CHECK(cudaGraphExecDestroy(outer));
  EMU_CHECK(cudaGraphExecDestroy(inner));
}

// ---- destroy paths ------------------------------------------------------------------------------

TEST_F(Graphs, DestroyPaths) {
  DeviceBuffer<float> y(kN);
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  launch_scale_add(x_.get(), 6.0f, 0.0f, y.get(), s1_);
  cudaGraph_t graph = nullptr;
  const cudaGraphExec_t exec = end_and_instantiate(s1_, &graph);
  EMU_CHECK(cudaGraphDestroy(graph));  // the executable graph does not need it
  EXPECT_EQ(cudaErrorInvalidValue, cudaGraphDestroy(graph));
  (void)cudaGetLastError();
  // Destroyed while a launch is in flight: the launch finishes (freed asynchronously, as documented).
  Gate gate;
  gate.enqueue(s1_);
  EMU_CHECK(cudaGraphLaunch(exec, s1_));
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EXPECT_EQ(cudaErrorInvalidValue, cudaGraphLaunch(exec, s1_));
  EXPECT_EQ(cudaErrorInvalidValue, cudaGraphExecDestroy(exec));
  (void)cudaGetLastError();
  gate.open();
  EMU_CHECK(cudaStreamSynchronize(s1_));
  EXPECT_EQ(y.download()[7], 6.0f * x_.download()[7]);
}

TEST_F(Graphs, AGraphThatUsesMemoryFreedSinceTheCaptureFaultsTheDevice) {
  float* scratch = nullptr;
  EMU_CHECK(cudaMalloc(&scratch, kBytes));
  EMU_CHECK(cudaStreamBeginCapture(s1_, cudaStreamCaptureModeGlobal));
  launch_scale_add(x_.get(), 1.0f, 0.0f, scratch, s1_);
  const cudaGraphExec_t exec = end_and_instantiate(s1_);
  EMU_CHECK(cudaFree(scratch));
  EMU_CHECK(cudaGraphLaunch(exec, s1_));
  expect_fault(cudaErrorIllegalAddress, "freed since the capture");
  EMU_CHECK(cudaGraphExecDestroy(exec));
}

}  // namespace
}  // namespace cuda_emu::test
