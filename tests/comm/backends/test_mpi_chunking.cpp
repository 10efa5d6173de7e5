// test_mpi_chunking.cpp — the mpi backend's large-count paths, exercised with small counts by
// building it with max_chunk_count (the element limit per MPI call; INT_MAX in production) 1, 3 and 5.
// Same exact checks as the generic suite (collective_checks.hpp). With limit L and n ranks:
// all_reduce/broadcast split into ceil(count / L) calls; block collectives take the sub-block path
// as soon as n*c > L; reduce_scatter then falls back to one MPI_Reduce per destination and chunk.
// Counts straddle those thresholds: below, at and above L and L / n, with remainders.
#include <gtest/gtest.h>

#include <climits>

#include "../collective_checks.hpp"
#include "comm/backends/mpi_backend.hpp"
#include "support/mpi_test_env.hpp"

namespace microddp::testing {
namespace {

class MpiChunking : public ::testing::TestWithParam<std::int64_t> {
 protected:
  // The limit is fixed at construction (every rank passes the same one): a communicator per test.
  void SetUp() override {
    comm_ = std::make_unique<Communicator>(std::make_unique<comm::MpiBackend>(runtime().world(), GetParam()));
  }
  void TearDown() override { comm_.reset(); }

  // Limit 1 means one MPI call per element: keep its counts small so np=5 stays fast.
  std::vector<std::int64_t> counts() const {
    const int n = comm_->size();
    if (GetParam() == 1) return counts_for(n, {3});
    return counts_for(n, {3, 5});
  }
  std::unique_ptr<Communicator> comm_;
};

TEST_P(MpiChunking, AllReduce) { run_cases(*comm_, cases_for(CollectiveKind::AllReduce, comm_->size(), counts())); }
TEST_P(MpiChunking, Broadcast) { run_cases(*comm_, cases_for(CollectiveKind::Broadcast, comm_->size(), counts())); }
TEST_P(MpiChunking, Scatter) { run_cases(*comm_, cases_for(CollectiveKind::Scatter, comm_->size(), counts())); }
TEST_P(MpiChunking, Gather) { run_cases(*comm_, cases_for(CollectiveKind::Gather, comm_->size(), counts())); }
TEST_P(MpiChunking, AllGather) { run_cases(*comm_, cases_for(CollectiveKind::AllGather, comm_->size(), counts())); }
TEST_P(MpiChunking, ReduceScatter) {
  run_cases(*comm_, cases_for(CollectiveKind::ReduceScatter, comm_->size(), counts()));
}

// Async collectives run the chunked path from the communication thread, and complete correctly in
// issue order.
TEST_P(MpiChunking, AsyncUnderLimit) {
  const int n = comm_->size();
  std::vector<float> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) a[static_cast<std::size_t>(i)] = static_cast<float>(reduce_input(comm_->rank(), i, n));
  b = a;
  comm::Work w1 = comm_->all_reduce(TensorView::of(a.data(), 1000), ReduceOp::Max, comm::Mode::Async);
  comm::Work w2 = comm_->all_reduce(TensorView::of(b.data(), 1000), ReduceOp::Sum, comm::Mode::Async);
  w2.wait();
  EXPECT_TRUE(w1.test());
  std::int64_t wrong = 0;
  for (int i = 0; i < 1000; ++i) {
    wrong += !same_bits(a[static_cast<std::size_t>(i)], reduce_expected<float>(ReduceOp::Max, n, i));
    wrong += !same_bits(b[static_cast<std::size_t>(i)], reduce_expected<float>(ReduceOp::Sum, n, i));
  }
  EXPECT_EQ(wrong, 0) << "#wrong";
}

TEST(MpiChunkingLimit, RejectsOutOfRange) {
  // Refused before the communicator is duplicated, on every rank alike: nothing hangs.
  EXPECT_THROW(comm::MpiBackend(runtime().world(), 0), core::Error);
  EXPECT_THROW(comm::MpiBackend(runtime().world(), std::int64_t{INT_MAX} + 1), core::Error);
  EXPECT_EQ(comm::MpiBackend(runtime().world()).max_chunk_count(), INT_MAX);
}

INSTANTIATE_TEST_SUITE_P(Limits, MpiChunking, ::testing::Values(1, 3, 5),
                         [](const ::testing::TestParamInfo<std::int64_t>& p) {
                           return "max" + std::to_string(p.param);
                         });

}  // namespace
}  // namespace microddp::testing
