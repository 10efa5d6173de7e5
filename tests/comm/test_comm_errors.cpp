// test_comm_errors.cpp — invalid calls fail loudly and never hang.
// Argument errors are detected by Communicator's validation before any communication, identically
// on every rank (each rank sees the same arguments here), so every rank throws core::Error and the
// communicator stays usable. A collective that fails inside the backend fails its Work with the
// backend's message and makes the communicator unusable. Unknown backend names are usage errors.
// Note: root-only arguments (scatter's send count, gather's recv count) can only be checked at the
// root; such an error thrown at the root alone would leave the other ranks waiting, so it is not
// exercised here (callers must pass consistent counts).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/factory.hpp"
#include "comm/backends/hier_backend.hpp"
#include "comm/backends/mpi_backend.hpp"
#include "core/error.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::testing {
namespace {

using comm::Mode;
using core::DType;
using core::ReduceOp;
using core::TensorView;

// Expects fn to throw core::Error whose message contains every one of `words`.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& words, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << what << ": no exception";
  } catch (const core::Error& e) {
    const std::string msg = e.what();
    for (const std::string& w : words)
      EXPECT_NE(msg.find(w), std::string::npos) << what << ": '" << w << "' missing in: " << msg;
  }
}

TEST(CommErrors, InvalidArgumentsThrowBeforeCommunicating) {
  auto comm = comm::make_communicator("mpi", runtime());
  const int n = comm->size();
  std::vector<float> a(8 * static_cast<std::size_t>(n) + 8), b(a.size());
  std::vector<std::int32_t> ia(8 * static_cast<std::size_t>(n));
  std::vector<double> d(a.size());
  const auto fa = [&](std::int64_t c) { return TensorView::of(a.data(), c); };
  const auto fb = [&](std::int64_t c) { return TensorView::of(b.data(), c); };
  const std::uint64_t issued = comm->collectives_issued();

  expect_error([&] { comm->all_reduce(fa(4), fb(5), ReduceOp::Sum); }, {"all_reduce", "4", "5"}, "count mismatch");
  expect_error([&] { comm->all_reduce(fa(4), TensorView::of(d.data(), 4), ReduceOp::Sum); },
               {"all_reduce", "f32", "f64"}, "dtype mismatch");
  expect_error([&] { comm->all_reduce(TensorView::of(ia.data(), 4), ReduceOp::Mean); }, {"mean", "i32"}, "mean on i32");
  expect_error(
      [&] { comm->reduce_scatter(TensorView::of(ia.data(), 2 * n), TensorView::of(ia.data(), 2), ReduceOp::Mean); },
      {"reduce_scatter", "mean"}, "reduce_scatter mean on i32");
  expect_error([&] { comm->all_reduce(fa(-1), fb(-1), ReduceOp::Sum); }, {"negative"}, "negative count");
  expect_error([&] { comm->all_reduce(TensorView(nullptr, 3, DType::F32), fb(3), ReduceOp::Sum); }, {"null"},
               "null buffer");
  expect_error([&] { comm->broadcast(fa(4), -1); }, {"broadcast", "root", "-1"}, "negative root");
  expect_error([&] { comm->broadcast(fa(4), n); }, {"broadcast", "root"}, "root == size");
  expect_error([&] { comm->scatter(fa(n), fb(1), n + 3); }, {"scatter", "root"}, "scatter root");
  expect_error([&] { comm->gather(fa(1), fb(n), -2); }, {"gather", "root"}, "gather root");
  expect_error([&] { comm->all_gather(fa(2), fb(2 * n + 1)); }, {"all_gather"}, "all_gather count");
  expect_error([&] { comm->reduce_scatter(fa(2 * n + 1), fb(2), ReduceOp::Sum); }, {"reduce_scatter"},
               "reduce_scatter count");
  expect_error([&] { comm->all_reduce(fa(4), fb(5), ReduceOp::Sum, Mode::Async); }, {"all_reduce"},
               "async count mismatch");
  comm->reduce_scatter(fa(2 * n), fb(2), ReduceOp::Sum, Mode::Async);  // valid: reaches the sequence
  comm->synchronize();

  // Only the one valid call above reached the sequence; the communicator still works.
  EXPECT_EQ(comm->collectives_issued(), issued + 1);
  std::vector<std::int32_t> x = {comm->rank() + 1};
  comm->all_reduce(TensorView::of(x.data(), 1), ReduceOp::Sum);
  EXPECT_EQ(x[0], n * (n + 1) / 2);
}

// A device-tagged view of host memory passes validation (same device on both sides) and then fails
// inside the backend's device staging on every rank alike, without any MPI call: "built without
// CUDA" in a CPU build, "not device memory" in a CUDA build. The same for both staged backends.
void expect_backend_failure_fails_the_work_and_later_calls(std::unique_ptr<comm::HostBackend> backend) {
  comm::Communicator comm(std::move(backend));
  std::vector<float> a(16, 1.0f), dev(16);
  const comm::Work ok = comm.all_reduce(TensorView::of(a.data(), 16), ReduceOp::Sum, Mode::Async);
  const TensorView fake_device(dev.data(), 16, DType::F32, core::Device::Cuda);
  const comm::Work bad = comm.all_reduce(fake_device, fake_device, ReduceOp::Sum, Mode::Async);
  ok.wait();
  EXPECT_FLOAT_EQ(a[0], static_cast<float>(comm.size()));
  expect_error([&] { bad.wait(); }, {"all_reduce", "device"}, "failed work");
  EXPECT_TRUE(bad.test());  // failed counts as complete: test() never blocks forever
  expect_error([&] { comm.all_reduce(TensorView::of(a.data(), 16), ReduceOp::Sum); }, {"unusable", "device"},
               "submit after failure");
}

TEST(CommErrors, BackendFailureFailsTheWorkAndLaterCalls) {
  expect_backend_failure_fails_the_work_and_later_calls(std::make_unique<comm::MpiBackend>(runtime().world()));
}

TEST(CommErrors, HierBackendFailureFailsTheWorkAndLaterCalls) {
  expect_backend_failure_fails_the_work_and_later_calls(
      std::make_unique<comm::HierBackend>(runtime().world(), comm_config()));
}

TEST(CommErrors, UnknownBackendIsUsageErrorListingBackends) {
  try {
    comm::make_communicator("no-such-backend", runtime());
    ADD_FAILURE() << "no exception";
  } catch (const core::UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no-such-backend"), std::string::npos) << msg;
    for (const std::string& b : comm::available_backends()) EXPECT_NE(msg.find(b), std::string::npos) << msg;
  }
  const auto names = comm::available_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), "mpi"), names.end());
}

}  // namespace
}  // namespace microddp::testing
