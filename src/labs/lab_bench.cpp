// lab_bench.cpp — see lab_bench.hpp.
#include "labs/lab_bench.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>

#include "comm/collective_reference.hpp"
#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "core/host_buffer.hpp"
#include "core/timer.hpp"

namespace microddp::labs {

namespace {

using core::TensorView;

// The program's LabBenchComm: the real clock, the world's barrier and max, one backend's all-reduce.
class ProgramBenchComm final : public LabBenchComm {
 public:
  ProgramBenchComm(comm::Communicator& comm, const comm::MpiRuntime& mpi, std::int64_t capacity_count)
      : comm_(comm), mpi_(mpi), send_(capacity_count), recv_(capacity_count) {}

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  double now_s() override { return core::now_s(); }
  void barrier() override {
    ++barriers_;
    const auto watched = mpi_.watch("lab-bench: the barrier (LabBenchComm::barrier)");
    MDDP_MPI_CHECK(MPI_Barrier(mpi_.world()));
  }
  void all_reduce(std::int64_t bytes) override {
    MDDP_USAGE_CHECK(bytes == count_ * 4, "lab 12: all_reduce(" << bytes << ") while measuring " << count_ * 4
                                                                << " bytes: measure the size you were asked for");
    ++calls_;
    comm_.all_reduce(TensorView::of(send_.data(), count_), TensorView::of(recv_.data(), count_), comm::ReduceOp::Sum);
  }
  void max_over_ranks(std::span<double> values) override {
    MDDP_USAGE_CHECK(values.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
                     "lab 12: max_over_ranks of " << values.size() << " values");
    const auto watched = mpi_.watch("lab-bench: the maximum over ranks (LabBenchComm::max_over_ranks)");
    MDDP_MPI_CHECK(
        MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_MAX, mpi_.world()));
  }

  // Before a size: the input of comm/collective_reference.hpp, a poisoned output, fresh counters.
  void prepare(std::int64_t count) {
    count_ = count;
    calls_ = barriers_ = 0;
    const comm::CollectiveShape shape{rank(), size(), 0, count, comm::ReduceOp::Sum};
    comm::collective_record(comm::CollectiveKind::AllReduce).init(shape, TensorView::of(send_.data(), count));
    comm::poison(TensorView::of(recv_.data(), count));
  }
  // After it: this rank's wrong elements in the last result (all of them when nothing ran).
  std::int64_t wrong() {
    const comm::CollectiveShape shape{rank(), size(), 0, count_, comm::ReduceOp::Sum};
    return comm::collective_record(comm::CollectiveKind::AllReduce)
        .check(shape, TensorView::of(recv_.data(), count_))
        .wrong;
  }
  std::int64_t calls() const { return calls_; }
  std::int64_t barriers() const { return barriers_; }

 private:
  comm::Communicator& comm_;
  const comm::MpiRuntime& mpi_;
  core::HostBuffer<float> send_, recv_;
  std::int64_t count_ = 0, calls_ = 0, barriers_ = 0;
};

}  // namespace

std::vector<LabBenchRow> run_lab_bench(comm::Communicator& comm, const comm::MpiRuntime& mpi,
                                       const std::vector<std::int64_t>& sizes, const LabBenchSettings& settings) {
  std::int64_t capacity = 1;
  for (const std::int64_t b : sizes) capacity = std::max(capacity, b / 4);
  ProgramBenchComm bench(comm, mpi, capacity);
  std::vector<LabBenchRow> rows;
  for (const std::int64_t b : sizes) {
    LabBenchRow row;
    row.count = std::max<std::int64_t>(1, b / 4);
    row.bytes = row.count * 4;
    bench.prepare(row.count);
    row.result = measure_all_reduce(bench, row.bytes, settings);
    row.calls = bench.calls();
    row.barriers = bench.barriers();
    // The program's own exchanges, after the student's function: the #wrong sum, and rank 0's time
    // against every rank's.
    std::int64_t wrong = bench.calls() > 0 ? bench.wrong() : row.count;
    double t[2] = {row.result.time_s, -row.result.time_s};
    double r0[3] = {row.result.time_s, row.result.algbw_gbs, row.result.busbw_gbs};
    {
      const auto watched = mpi.watch("lab-bench: the program's checks after measure_all_reduce");
      MDDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, mpi.world()));
      MDDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_MAX, mpi.world()));
      MDDP_MPI_CHECK(MPI_Bcast(r0, 3, MPI_DOUBLE, 0, mpi.world()));
    }
    row.result = {r0[0], r0[1], r0[2]};
    row.wrong = wrong;
    row.ranks_agree = t[0] == -t[1];  // the largest time is the smallest
    rows.push_back(row);
  }
  return rows;
}

}  // namespace microddp::labs
