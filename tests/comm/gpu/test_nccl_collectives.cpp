// test_nccl_collectives.cpp — exactness of the NCCL backends (`nccl`, or `nccl-ring` with
// --backend=nccl-ring), one GPU per rank; with --backend=mpi or --backend=hier and
// --gtest_filter='*Device*' the device-buffer path of the host backends (device_staged_backend.hpp;
// hier's nodes from MICRODDP_HIER_NODE_SIZES, read from the environment as the app reads it).
//   * HostStaged: the backend-generic exactness matrix of collective_checks.hpp (every collective,
//     sizes 0, 1, < ranks, not divisible, around 2^k, in/out of place, roots, dtypes, ops), compared
//     bitwise. Host buffers go through the staging path, whose staged call keeps the in-place layout
//     (staging_plan.hpp), so every NCCL code path of enqueue_device runs on device pointers.
//   * Teardown with a collective pending and no timeout aborts instead of waiting forever; the host's
//     wait for a compute stream held by a collective no peer joins (eager or replayed in a CUDA graph)
//     ends in the timeout with an abort; a graph's replays keep the scratch they were captured with.
//   * Device*: device buffers directly, async, ordered after a user compute stream; slot reuse with
//     more outstanding collectives than completion slots; a host pointer marked Device::Cuda; the
//     exactness matrix of broadcast, scatter, gather, all-gather and reduce-scatter on device buffers
//     (DeviceGuarded: collective_checks.hpp's guarded buffers, copied whole to the device and back).
// Own main (the harness of tests/support/mpi_gtest_run.hpp with a skip check): every rank exits 77
// (ctest: skipped) when some rank sees no GPU, or, for the NCCL backends, when ranks share one.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../collective_checks.hpp"
#include "comm/comm_config.hpp"
#include "comm/factory.hpp"
#include "comm/gpu/gpu_sharing.hpp"
#include "comm/runtime/mpi_runtime.hpp"
#include "comm/gpu/nccl_backend.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device.hpp"
#include "support/gpu_ranks.hpp"
#include "support/mpi_gtest_run.hpp"
#include "support/mpi_test_env.hpp"
#include "support/test_args.hpp"

namespace microddp::testing {
namespace {

class Nccl : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { comm_ = comm::make_communicator(backend_arg("nccl"), runtime(), comm_config()); }
  static void TearDownTestSuite() { comm_.reset(); }
  static std::unique_ptr<Communicator> comm_;
  static int n() { return comm_->size(); }
  // Null for a non-NCCL backend (the device path of `mpi` and `hier` runs the Device* tests too).
  static comm::NcclBackend* nccl() { return comm_->backend_as<comm::NcclBackend>(); }
};
std::unique_ptr<Communicator> Nccl::comm_;

// ---- the generic matrix through host staging ----------------------------------------------------

TEST_F(Nccl, HostStagedAllReduce) {
  run_cases(*comm_, cases_for(CollectiveKind::AllReduce, n(), counts_for(n(), {4, 10, 16})));
}
TEST_F(Nccl, HostStagedBroadcast) {
  run_cases(*comm_, cases_for(CollectiveKind::Broadcast, n(), counts_for(n(), {4, 10, 16})));
}
TEST_F(Nccl, HostStagedScatter) {
  run_cases(*comm_, cases_for(CollectiveKind::Scatter, n(), counts_for(n(), {4, 10, 16})));
}
TEST_F(Nccl, HostStagedGather) {
  run_cases(*comm_, cases_for(CollectiveKind::Gather, n(), counts_for(n(), {4, 10, 16})));
}
TEST_F(Nccl, HostStagedAllGather) {
  run_cases(*comm_, cases_for(CollectiveKind::AllGather, n(), counts_for(n(), {4, 10, 16})));
}
TEST_F(Nccl, HostStagedReduceScatter) {
  run_cases(*comm_, cases_for(CollectiveKind::ReduceScatter, n(), counts_for(n(), {4, 10, 16})));
}
TEST_F(Nccl, HostStagedLargeAndBarrier) {
  constexpr std::int64_t kLarge = 1000003;  // prime: divisible by no rank count
  std::vector<Case> cases;
  for (bool ip : {false, true}) {
    cases.push_back({CollectiveKind::AllReduce, DType::F32, ReduceOp::Sum, kLarge, ip, 0});
    cases.push_back({CollectiveKind::ReduceScatter, DType::F32, ReduceOp::Mean, kLarge, ip, 0});
    cases.push_back({CollectiveKind::AllGather, DType::F64, ReduceOp::Sum, kLarge, ip, 0});
  }
  run_cases(*comm_, cases);
  for (int i = 0; i < 3; ++i) comm_->barrier();
  comm_->barrier(comm::Mode::Async).wait();
}

// ---- device buffers ------------------------------------------------------------------------------

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::int64_t n) : n_(n) {
    if (n_ > 0) MDDP_CUDA_CHECK(cudaMalloc(&p_, bytes()));
  }
  ~DeviceArray() { (void)cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  TensorView view() { return TensorView::of(p_, n_, core::Device::Cuda); }
  std::size_t bytes() const { return static_cast<std::size_t>(n_) * sizeof(T); }
  T* get() { return p_; }

 private:
  std::int64_t n_;
  T* p_ = nullptr;
};

// A guarded buffer (collective_checks.hpp) whose collective view is device memory: the whole
// storage, guards and poison included, is copied to the GPU before the collective and back after it,
// so the inputs, the guard elements and the results are checked exactly as for host buffers.
template <typename T>
class DeviceGuarded : public Guarded<T> {
 public:
  DeviceGuarded(std::int64_t count, DType dtype)
      : Guarded<T>(count, dtype), device_(count + 2 * kGuard), count_(count), dtype_(dtype) {}
  TensorView view() {
    return TensorView(count_ == 0 ? nullptr : device_.get() + kGuard, count_, dtype_, core::Device::Cuda);
  }
  TensorView view(std::int64_t offset, std::int64_t n) {
    return TensorView(count_ == 0 ? nullptr : device_.get() + kGuard + offset, n, dtype_, core::Device::Cuda);
  }
  // Synchronous copies on the legacy stream: the backends order their own work after it (NCCL waits
  // for the compute stream, by default the legacy one; mpi and hier wait for the whole device).
  void to_device() {
    MDDP_CUDA_CHECK(cudaMemcpy(device_.get(), this->storage(), this->storage_bytes(), cudaMemcpyHostToDevice));
  }
  void to_host() {
    MDDP_CUDA_CHECK(cudaDeviceSynchronize());
    MDDP_CUDA_CHECK(cudaMemcpy(this->storage(), device_.get(), this->storage_bytes(), cudaMemcpyDeviceToHost));
  }

 private:
  DeviceArray<T> device_;
  std::int64_t count_;
  DType dtype_;  // f16/bf16 are stored as their bits (T = std::uint16_t)
};

// Counts as for the host-staged matrix above (sizes 0, 1, < ranks, not divisible, around 2^4, 2^10).
TEST_F(Nccl, DeviceBroadcast) {
  run_cases<DeviceGuarded>(*comm_, cases_for(CollectiveKind::Broadcast, n(), counts_for(n(), {4, 10})));
}
TEST_F(Nccl, DeviceScatter) {
  run_cases<DeviceGuarded>(*comm_, cases_for(CollectiveKind::Scatter, n(), counts_for(n(), {4, 10})));
}
TEST_F(Nccl, DeviceGather) {
  run_cases<DeviceGuarded>(*comm_, cases_for(CollectiveKind::Gather, n(), counts_for(n(), {4, 10})));
}
TEST_F(Nccl, DeviceAllGather) {
  run_cases<DeviceGuarded>(*comm_, cases_for(CollectiveKind::AllGather, n(), counts_for(n(), {4, 10})));
}
TEST_F(Nccl, DeviceReduceScatter) {
  run_cases<DeviceGuarded>(*comm_, cases_for(CollectiveKind::ReduceScatter, n(), counts_for(n(), {4, 10})));
}

// Inputs are uploaded asynchronously on a user stream given to set_compute_stream(): if the
// communication stream did not wait for it, the collective would read unwritten (poisoned) memory.
TEST_F(Nccl, DeviceAsyncAllReduceOrderedAfterComputeStream) {
  const int r = comm_->rank();
  cudaStream_t compute = nullptr;
  MDDP_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  // NCCL: ordered by an event; mpi, hier: device staging waits for the whole GPU (device_staging.hpp).
  comm_->set_compute_stream(core::DeviceStream(compute));  // a no-op on the host backends
  for (std::int64_t count :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{65537}, std::int64_t{1000003}}) {
    for (bool in_place : {false, true}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
        std::vector<float> host(static_cast<std::size_t>(count));
        for (std::int64_t i = 0; i < count; ++i)
          host[static_cast<std::size_t>(i)] = static_cast<float>(reduce_input(r, i, n()));
        DeviceArray<float> send(count), recv(count);
        if (count > 0) {
          MDDP_CUDA_CHECK(cudaMemsetAsync(send.get(), 0xFF, send.bytes(), compute));  // poison (NaN)
          MDDP_CUDA_CHECK(cudaMemsetAsync(recv.get(), 0xFF, recv.bytes(), compute));
          MDDP_CUDA_CHECK(cudaMemcpyAsync(send.get(), host.data(), send.bytes(), cudaMemcpyHostToDevice, compute));
        }
        comm::Work w = comm_->all_reduce(send.view(), in_place ? send.view() : recv.view(), op, comm::Mode::Async);
        w.wait();
        EXPECT_TRUE(w.test());
        if (count > 0 && nccl() != nullptr) {
          EXPECT_GT(w.completion_ns(), 0);
        }
        std::vector<float> got(static_cast<std::size_t>(count));
        if (count > 0)
          MDDP_CUDA_CHECK(
              cudaMemcpy(got.data(), in_place ? send.get() : recv.get(), send.bytes(), cudaMemcpyDeviceToHost));
        const Case k{CollectiveKind::AllReduce, DType::F32, op, count, in_place, 0};
        report(k, checked(k, shape_of(*comm_, k), TensorView::of(count == 0 ? nullptr : got.data(), count)));
      }
    }
  }
  comm_->synchronize();
  comm_->set_compute_stream(core::DeviceStream());
  MDDP_CUDA_CHECK(cudaStreamDestroy(compute));
}

// More outstanding async collectives than completion slots (1024): slot reuse waits for the old one.
TEST_F(Nccl, DeviceManyOutstandingCollectives) {
  constexpr int kCalls = 2500;
  DeviceArray<std::int32_t> buf(1);
  const std::int32_t mine = comm_->rank() + 1;
  MDDP_CUDA_CHECK(cudaMemcpy(buf.get(), &mine, sizeof mine, cudaMemcpyHostToDevice));
  MDDP_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<comm::Work> works;
  for (int i = 0; i < kCalls; ++i) works.push_back(comm_->all_reduce(buf.view(), ReduceOp::Max, comm::Mode::Async));
  comm_->synchronize();
  for (const comm::Work& w : works) EXPECT_TRUE(w.test());
  std::int32_t got = 0;
  MDDP_CUDA_CHECK(cudaMemcpy(&got, buf.get(), sizeof got, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, n());
}

// A host pointer labelled Device::Cuda is refused before anything is enqueued (every rank does the
// same call, so no rank is left waiting), and the communicator stays usable.
TEST_F(Nccl, DeviceLabelOnHostMemoryIsRefused) {
  if (nccl() == nullptr) GTEST_SKIP() << "NCCL backends only";
  std::vector<float> host(16, 1.0f);
  const TensorView wrong = TensorView::of(host.data(), 16, core::Device::Cuda);
  EXPECT_THROW(comm_->all_reduce(wrong, ReduceOp::Sum), core::Error);
  comm_->barrier();
}

// Teardown with a collective still pending and no timeout (--comm-timeout 0, where every wait may last
// forever): rank 0 launches an all-reduce that no other rank joins, then destroys its communicator:
// while an exception unwinds (rank 0 is failing) it aborts at once; otherwise after the teardown grace.
// Either way the destruction returns (it used to wait forever) and the other ranks tear down cleanly.
TEST_F(Nccl, TeardownWithPendingWorkAbortsInsteadOfWaitingForever) {
  if (nccl() == nullptr) GTEST_SKIP() << "NCCL backends only";
  if (n() < 2) GTEST_SKIP() << "needs ranks that do not join";
  comm::CommConfig config = comm_config();
  config.nccl_timeout_s = 0.0;
  constexpr double kGraceS = 0.5;
  for (bool unwinding : {true, false}) {
    SCOPED_TRACE(unwinding ? "destroyed while an exception unwinds" : "destroyed after the grace");
    auto doomed = comm::make_communicator(backend_arg("nccl"), runtime(), config);
    doomed->backend_as<comm::NcclBackend>()->set_teardown_grace(kGraceS);
    DeviceArray<float> buf(1000);
    double seconds = 0.0;
    if (comm_->rank() == 0) {
      (void)doomed->all_reduce(buf.view(), ReduceOp::Sum, comm::Mode::Async);
      const std::int64_t start = core::now_ns();
      if (unwinding) {
        try {
          const auto failing = std::move(doomed);
          throw std::runtime_error("rank 0 fails with a collective in flight");
        } catch (const std::runtime_error&) {}
      } else {
        doomed.reset();
      }
      seconds = static_cast<double>(core::now_ns() - start) * 1e-9;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    doomed.reset();  // the other ranks: nothing pending, a plain destroy
    if (comm_->rank() == 0) {
      // Bounds: the abort itself takes one poll round of the emulated NCCL (0.1 s); 5 s of margin for
      // a loaded machine, far below "forever".
      EXPECT_LT(seconds, (unwinding ? 0.0 : kGraceS) + 5.0);
      if (!unwinding) {
        EXPECT_GE(seconds, kGraceS) << "a clean teardown waits for the grace first";
      }
    }
  }
}

// A peer that never joins (dead, or stopped: NCCL's kernel then waits forever, it never fails): the
// host's wait for the compute stream, which waits for the collective, ends after the timeout with an
// abort that releases the stream, eagerly (order_compute_after) and in a CUDA graph (the collective
// captured, then replayed); it must never block in cudaStreamSynchronize. Only rank 0 issues anything.
TEST_F(Nccl, StreamWaitOnAHungPeerEndsInTheTimeoutWithAnAbort) {
  if (nccl() == nullptr) GTEST_SKIP() << "NCCL backends only";
  if (n() < 2) GTEST_SKIP() << "needs a rank that does not join";
  constexpr double kTimeoutS = 1.0;
  for (const bool graphed : {false, true}) {
    SCOPED_TRACE(graphed ? "replayed from a CUDA graph" : "eager, ordered after on the device");
    auto doomed = comm::make_communicator(backend_arg("nccl"), runtime(), comm_config());
    doomed->set_comm_timeout(kTimeoutS);
    cudaStream_t compute = nullptr;
    MDDP_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    doomed->set_compute_stream(core::DeviceStream(compute));
    DeviceArray<float> buf(1000);
    doomed->all_reduce(buf.view(), ReduceOp::Sum);  // with every rank: sizes nccl-ring's scratch before a capture
    if (comm_->rank() == 0) {
      cudaGraphExec_t exec = nullptr;
      if (graphed) {
        MDDP_CUDA_CHECK(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal));
        doomed->order_compute_after(doomed->all_reduce(buf.view(), ReduceOp::Sum, comm::Mode::Async));
        cudaGraph_t graph = nullptr;
        MDDP_CUDA_CHECK(cudaStreamEndCapture(compute, &graph));
        MDDP_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        MDDP_CUDA_CHECK(cudaGraphDestroy(graph));
        MDDP_CUDA_CHECK(cudaGraphLaunch(exec, compute));
      } else {
        doomed->order_compute_after(doomed->all_reduce(buf.view(), ReduceOp::Sum, comm::Mode::Async));
      }
      const std::int64_t start = core::now_ns();
      try {
        doomed->wait_for_stream(core::DeviceStream(compute));
        ADD_FAILURE() << "the wait returned although no peer joined";
      } catch (const core::Error& e) {
        EXPECT_NE(std::string(e.what()).find("--comm-timeout"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("ncclCommAbort"), std::string::npos) << e.what();
      }
      const double seconds = static_cast<double>(core::now_ns() - start) * 1e-9;
      EXPECT_GE(seconds, kTimeoutS);
      EXPECT_LT(seconds, kTimeoutS + 5.0);              // one poll round of the abort; margin for a loaded machine
      MDDP_CUDA_CHECK(cudaStreamSynchronize(compute));  // the abort released it
      if (exec != nullptr) MDDP_CUDA_CHECK(cudaGraphExecDestroy(exec));
      EXPECT_THROW(doomed->all_reduce(buf.view(), ReduceOp::Sum), core::Error) << "aborted: unusable";
    }
    MPI_Barrier(MPI_COMM_WORLD);
    doomed.reset();
    MDDP_CUDA_CHECK(cudaStreamDestroy(compute));
  }
}

// The nccl-ring scratch block grows with the largest all-reduce. A collective captured into a CUDA graph
// keeps using the block it was captured with, so a larger eager all-reduce afterwards must not free it:
// every replay still reads valid memory and sums exactly (on the emulated device a replay that touches
// freed memory faults; on a GPU it would read whatever was reallocated there).
TEST_F(Nccl, GraphReplaysKeepTheirScratchWhenALargerCollectiveFollows) {
  if (nccl() == nullptr) GTEST_SKIP() << "NCCL backends only";
  const int r = comm_->rank();
  constexpr std::int64_t kSmall = 1000, kLarge = 64 * kSmall;
  cudaStream_t compute = nullptr;
  MDDP_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  DeviceArray<std::int32_t> small(kSmall), large(kLarge);
  comm_->set_compute_stream(core::DeviceStream(compute));
  auto fill = [&](DeviceArray<std::int32_t>& a, std::int64_t count, int round) {
    std::vector<std::int32_t> host(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i)
      host[static_cast<std::size_t>(i)] = (r + 1) * round + static_cast<int>(i % 7);
    MDDP_CUDA_CHECK(cudaMemcpyAsync(a.get(), host.data(), a.bytes(), cudaMemcpyHostToDevice, compute));
    MDDP_CUDA_CHECK(cudaStreamSynchronize(compute));  // pageable source: copied before it returns
  };
  auto expect_sum = [&](DeviceArray<std::int32_t>& a, std::int64_t count, int round) {
    std::vector<std::int32_t> got(static_cast<std::size_t>(count));
    MDDP_CUDA_CHECK(cudaMemcpy(got.data(), a.get(), a.bytes(), cudaMemcpyDeviceToHost));
    const int ranks_sum = n() * (n() + 1) / 2;
    for (std::int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(got[static_cast<std::size_t>(i)], ranks_sum * round + n() * static_cast<int>(i % 7)) << "element " << i;
    }
  };
  fill(small, kSmall, 1);  // eager first: the scratch is sized before the capture
  comm_->all_reduce(small.view(), ReduceOp::Sum);
  MDDP_CUDA_CHECK(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal));
  comm_->order_compute_after(comm_->all_reduce(small.view(), ReduceOp::Sum, comm::Mode::Async));
  cudaGraph_t graph = nullptr;
  MDDP_CUDA_CHECK(cudaStreamEndCapture(compute, &graph));
  cudaGraphExec_t exec = nullptr;
  MDDP_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  MDDP_CUDA_CHECK(cudaGraphDestroy(graph));
  for (int round = 2; round <= 3; ++round) {
    if (round == 3) {  // a larger eager all-reduce grows the scratch between two replays
      fill(large, kLarge, 5);
      comm_->all_reduce(large.view(), ReduceOp::Sum);
      expect_sum(large, kLarge, 5);
    }
    fill(small, kSmall, round);
    MDDP_CUDA_CHECK(cudaGraphLaunch(exec, compute));
    comm_->wait_for_stream(core::DeviceStream(compute));
    expect_sum(small, kSmall, round);
  }
  MDDP_CUDA_CHECK(cudaGraphExecDestroy(exec));
  comm_->synchronize();
  comm_->set_compute_stream(core::DeviceStream());
  MDDP_CUDA_CHECK(cudaStreamDestroy(compute));
}

TEST_F(Nccl, SequenceAgrees) { expect_same_sequence_on_every_rank(*comm_); }

}  // namespace

// Skip on every rank alike, never half the job: every rank needs a GPU, and the NCCL backends
// (stream backends) need one GPU per rank; the host backends stage through the host and may share a GPU.
std::string skip_without_gpus(const comm::MpiRuntime& runtime) {
  const comm::GpuSharing sharing = exchange_rank_gpus(runtime);
  if (sharing.ranks_without_gpu > 0) return "no visible CUDA device on some rank";
  const bool nccl_backend = comm::describe_backend(backend_arg("nccl")).kind == comm::BackendKind::Stream;
  if (nccl_backend && sharing.shared()) return "NCCL needs one GPU per rank, but " + sharing.example;
  return "";
}

}  // namespace microddp::testing

int main(int argc, char** argv) {
  return microddp::testing::run_mpi_gtest(argc, argv, &microddp::testing::skip_without_gpus);
}
