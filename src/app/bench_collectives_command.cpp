// bench_collectives_command.cpp — `microddp bench collectives`: an nccl-tests-style sweep of every
// collective over several backends side by side, plus an async-progress measurement.
//
// Method (also printed in the header):
//   * Sizes from --min-bytes to --max-bytes, multiplied by --factor. "size" is nccl-tests' size: the
//     all-reduce/broadcast buffer, the gathered total for all-gather/gather, the scattered total for
//     reduce-scatter/scatter. Block collectives round it down to a multiple of n·element size.
//   * For every size the backends run interleaved (size-major, then backend, then out-of-place and
//     in-place), so machine drift hits all of them alike. Each timed iteration: re-initialise the
//     inputs and poison the output (untimed), MPI_Barrier, time the collective. time = max over
//     ranks of each rank's per-iteration MEDIAN.
//   * Every collective's inputs, closed-form results and bus factor come from its record in
//     comm/collective_reference.hpp, the one the exactness tests use (nccl-tests keeps one file per
//     collective). algbw = size / time; busbw = algbw · factor (all-reduce 2(n-1)/n, all-gather /
//     reduce-scatter / gather / scatter (n-1)/n, broadcast 1; docs/allreduce.md).
//   * --dtype float | double | int32 | half | bfloat16 (nccl-tests' -d). Inputs are small integers
//     (exact in f32 up to comm::kMaxExactRanks ranks; half and bfloat16 have inputs of their own,
//     exact up to comm::kMaxExact16Ranks however a backend orders and accumulates the sums: ours
//     decode, add in fp32 and round once per combination, as gradient compression's wire formats
//     do), so every result of every iteration is compared exactly with its closed form; #wrong
//     sums the wrong elements over iterations and ranks. -c 0 skips the check (#wrong: N/A).
//   * nccl-tests' short options: -b/-e/-f sizes, -n iters, -w warmup, -c check, -d dtype, -o redop.
//   * The bench's own exchanges (the barrier, the max of the times, the sum of #wrong) are plain MPI
//     calls on MPI_COMM_WORLD, never on a communicator under test: checked, and watched like every
//     MPI call outside a communicator (docs/reliability.md), so a stuck rank ends the job.
//   * Memory (--memory): the buffers a backend is measured on. auto = GPU memory for the GPU backends
//     (nccl, nccl-ring: NCCL on host buffers would measure our host staging, not NCCL) and host memory
//     for the others; device = GPU memory for every backend (the `mpi` backend then measures its
//     device path: synchronise + pinned staging, or CUDA-aware MPI). Inputs are built on the host and
//     copied in, results copied back for the check: both untimed, as init and check are.
//   * --overlap-bytes: async all-reduce of that size issued, then the caller computes T ms (a
//     floating-point loop that never touches the communicator), then waits. If the collective
//     progresses during the compute, wait ≈ max(0, comm - T); if it only progressed inside wait(),
//     wait ≈ comm.
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli_values.hpp"
#include "app/command.hpp"
#include "app/compute_device.hpp"
#include "comm/collective_reference.hpp"
#include "comm/factory.hpp"
#include "comm/transport/mpi_check.hpp"
#include "core/error.hpp"
#include "core/host_buffer.hpp"
#include "core/timer.hpp"
#include "kernels/ops.hpp"
#include "kernels/ops_buffer.hpp"
#include "perf/median.hpp"

namespace microddp::app {

namespace {

using perf::median;

using comm::CollectiveKind;
using comm::Communicator;
using core::ReduceOp;
using core::TensorView;

// --dtype: nccl-tests' names, and ours.
struct BenchType {
  const char* name;
  core::DType dtype;
};
constexpr BenchType kTypes[] = {{"float", core::DType::F32},
                                {"double", core::DType::F64},
                                {"int32", core::DType::I32},
                                {"half", core::DType::F16},
                                {"bfloat16", core::DType::BF16}};
core::DType dtype_named(const std::string& name) {
  for (const BenchType& t : kTypes) {
    if (name == t.name) return t.dtype;
  }
  return core::DType::F32;  // unreachable: CLI11 checks the choice
}
bool is_16bit(core::DType t) { return t == core::DType::F16 || t == core::DType::BF16; }

// NAME+dsync: the same backend with --debug-sync (every collective's fingerprint compared first),
// so the check's latency shows side by side with the plain backend.
constexpr std::string_view kDsyncSuffix = "+dsync";
bool has_dsync_suffix(const std::string& b) {
  return b.size() > kDsyncSuffix.size() &&
         b.compare(b.size() - kDsyncSuffix.size(), kDsyncSuffix.size(), kDsyncSuffix) == 0;
}
std::string backend_of(const std::string& b) {
  return has_dsync_suffix(b) ? b.substr(0, b.size() - kDsyncSuffix.size()) : b;
}

// "ring", or "ring+dsync" when the communicator compares every collective's fingerprint first.
std::string backend_label(const Communicator& c) { return std::string(c.name()) + (c.debug_sync() ? "+dsync" : ""); }

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// One --overlap-ms entry: a number of milliseconds >= 0 ("abc" and "5x" are refused, not 0).
double parse_overlap_ms(const std::string& t) {
  char* end = nullptr;
  const double ms = std::strtod(t.c_str(), &end);
  MDDP_USAGE_CHECK(end != t.c_str() && *end == '\0' && ms >= 0 && ms < 1e9,
                   "bad --overlap-ms entry '" << t << "' (a number of milliseconds >= 0)");
  return ms;
}

const std::map<std::string, CollectiveKind> kOps = {{"allreduce", CollectiveKind::AllReduce},
                                                    {"allgather", CollectiveKind::AllGather},
                                                    {"reducescatter", CollectiveKind::ReduceScatter},
                                                    {"broadcast", CollectiveKind::Broadcast},
                                                    {"gather", CollectiveKind::Gather},
                                                    {"scatter", CollectiveKind::Scatter}};

// The bench's own exchanges on the world (see the file comment).
void world_barrier(const comm::MpiRuntime& mpi) {
  const auto watched = mpi.watch("bench collectives: the barrier before a timed collective");
  MDDP_MPI_CHECK(MPI_Barrier(mpi.world()));
}
void max_over_ranks(const comm::MpiRuntime& mpi, const double* mine, double* out, int n) {
  const auto watched = mpi.watch("bench collectives: the maximum of the ranks' times");
  MDDP_MPI_CHECK(MPI_Allreduce(mine, out, n, MPI_DOUBLE, MPI_MAX, mpi.world()));
}
std::int64_t sum_over_ranks(const comm::MpiRuntime& mpi, std::int64_t mine) {
  const auto watched = mpi.watch("bench collectives: the sum of the ranks' wrong elements");
  std::int64_t all = 0;
  MDDP_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT64_T, MPI_SUM, mpi.world()));
  return all;
}

struct Result {
  std::string op, backend;
  std::int64_t bytes = 0, count = 0;
  bool in_place = false;
  double time_us = 0, algbw = 0, busbw = 0;
  std::int64_t wrong = 0;
};

class BenchCollectivesCommand final : public Command {
 public:
  explicit BenchCollectivesCommand(CLI::App* sub) {
    // nccl-tests' short options beside ours: -b 8 -e 128M -f 2 -n 20 -w 3 -c 1 -d float -o sum.
    add_byte_size_option(sub, "-b,--min-bytes", min_bytes_, "Smallest size", 2, std::int64_t{1} << 40);
    add_byte_size_option(sub, "-e,--max-bytes", max_bytes_, "Largest size", 2, std::int64_t{1} << 40);
    sub->add_option("-f,--factor", factor_, "Size multiplier between rows")
        ->check(CLI::Range(2, 1024))
        ->capture_default_str();
    sub->add_option("-w,--warmup", warmup_, "Untimed iterations per cell")
        ->check(CLI::Range(0, 100000))
        ->capture_default_str();
    sub->add_option("-n,--iters", iters_, "Timed iterations per cell")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    sub->add_option("-c,--check", check_, "Check every result exactly (1) or not (0: #wrong is N/A)")
        ->check(CLI::Range(0, 1))
        ->capture_default_str();
    sub->add_option("-d,--dtype", dtype_,
                    "Element type: float, double, int32, half, bfloat16 (half and bfloat16 reduce with fp32 "
                    "accumulation, as the gradient wire formats)")
        ->check(CLI::IsMember({"float", "double", "int32", "half", "bfloat16"}))
        ->capture_default_str();
    sub->add_option("--backends", backends_,
                    "Comma-separated backends, compared side by side (NAME+dsync: with --debug-sync)")
        ->capture_default_str();
    sub->add_option("--ops", ops_, "Comma-separated: allreduce,allgather,reducescatter,broadcast,gather,scatter")
        ->capture_default_str();
    sub->add_option("-o,--redop", redop_, "Reduction: sum, max, min")
        ->check(CLI::IsMember({"sum", "max", "min"}))
        ->capture_default_str();
    sub->add_option("--csv", csv_, "Also write every row to this CSV file (rank 0)");
    sub->add_option("--json", json_, "Also write every row to this JSON file (rank 0)");
    sub->add_option("--memory", memory_,
                    "Buffers: auto (GPU memory for nccl, nccl-ring; host for the others), host, device")
        ->check(CLI::IsMember({"auto", "host", "device"}))
        ->capture_default_str();
    add_byte_size_option(sub, "--overlap-bytes", overlap_bytes_, "Async-progress check: all-reduce size (0 = skip)", 0,
                         std::int64_t{1} << 40);
    sub->add_option("--overlap-ms", overlap_ms_, "Async-progress check: compute times in ms, comma-separated")
        ->capture_default_str();
  }
  void validate() override {
    MDDP_USAGE_CHECK(min_bytes_ <= max_bytes_, "--min-bytes " << min_bytes_ << " > --max-bytes " << max_bytes_);
    dt_ = dtype_named(dtype_);
    es_ = static_cast<std::int64_t>(core::dtype_bytes(dt_));
    MDDP_USAGE_CHECK(min_bytes_ >= es_,
                     "--min-bytes " << min_bytes_ << " is smaller than one " << dtype_ << " (" << es_ << " bytes)");
    MDDP_USAGE_CHECK(!split_list(backends_).empty(), "--backends is empty");
    // Before MPI starts, so an unknown name is exit 2 with one message, not an MPI_ABORT.
    for (const auto& b : split_list(backends_)) comm::check_backend_available(backend_of(b));
    for (const auto& o : split_list(ops_)) MDDP_USAGE_CHECK(kOps.count(o) == 1, "unknown op '" << o << "' in --ops");
    for (const auto& t : split_list(overlap_ms_)) (void)parse_overlap_ms(t);
  }
  int run(const comm::MpiRuntime& mpi) override;

 private:
  Result run_cell(const comm::MpiRuntime& mpi, Communicator& c, CollectiveKind op, std::int64_t bytes, bool in_place,
                  bool on_device);
  // Whether backend `name` is measured on GPU memory (--memory): auto puts the stream backends there
  // (their description says which; NCCL on host buffers would measure our host staging).
  bool on_device(const std::string& backend) const {
    const auto d = comm::find_backend(backend_of(backend));  // "nccl+dsync" is nccl
    return memory_ == "device" || (memory_ == "auto" && d && d->kind == comm::BackendKind::Stream);
  }
  void run_overlap(const comm::MpiRuntime& mpi, std::vector<std::unique_ptr<Communicator>>& comms);

  std::int64_t min_bytes_ = 8, max_bytes_ = std::int64_t{64} << 20, overlap_bytes_ = 0;
  int factor_ = 2, warmup_ = 3, iters_ = 20, check_ = 1;
  std::string backends_ = "mpi,ring,rd,auto", ops_ = "allreduce", redop_ = "sum", overlap_ms_ = "0,5,10,20,40";
  std::string csv_, json_, memory_ = "auto", dtype_ = "float";
  core::DType dt_ = core::DType::F32;  // --dtype
  std::int64_t es_ = 4;                // its bytes per element
  // Sized once for the largest cell, in 8-byte words so every dtype is aligned; views of any dtype
  // are taken at byte offsets.
  core::HostBuffer<double> send_, recv_;
  // GPU memory, only when some backend is measured on it: the cell's inputs are built in send_ /
  // recv_ and copied here, the results copied back (both untimed).
  std::unique_ptr<kernels::Ops> gpu_;
  kernels::OpsBuffer<double> dev_send_, dev_recv_;
  ReduceOp rop_ = ReduceOp::Sum;
};

Result BenchCollectivesCommand::run_cell(const comm::MpiRuntime& mpi, Communicator& c, CollectiveKind op,
                                         std::int64_t bytes, bool in_place, bool on_device) {
  const int n = c.size(), r = c.rank();
  const std::int64_t total = bytes / es_;
  const bool blocky = op != CollectiveKind::AllReduce && op != CollectiveKind::Broadcast;
  const std::int64_t block = blocky ? total / n : total;  // per-rank block (or whole buffer)
  const std::int64_t count = blocky ? block * n : total;
  auto* s = reinterpret_cast<char*>(send_.data());
  auto* d = reinterpret_cast<char*>(recv_.data());
  const int root = 0;
  // A view of `elems` elements of --dtype at element offset `at` of buffer `base`.
  auto view = [this](char* base, std::int64_t at, std::int64_t elems) {
    return TensorView(base + at * es_, elems, dt_);
  };
  // Views for this cell (in place per types.hpp's conventions).
  TensorView sv, rv;
  switch (op) {
    case CollectiveKind::AllReduce:
      sv = view(in_place ? d : s, 0, count);
      rv = view(d, 0, count);
      break;
    case CollectiveKind::Broadcast:
      rv = view(d, 0, count);
      break;
    case CollectiveKind::AllGather:
      rv = view(d, 0, count);
      sv = in_place ? view(d, r * block, block) : view(s, 0, block);
      break;
    case CollectiveKind::ReduceScatter:
      sv = view(in_place ? d : s, 0, count);
      rv = view(d, 0, block);
      break;
    case CollectiveKind::Gather:
      rv = view(d, 0, count);
      sv = in_place && r == root ? view(d, r * block, block) : view(s, 0, block);
      break;
    case CollectiveKind::Scatter:
      sv = view(s, 0, count);
      rv = in_place && r == root ? view(s, r * block, block) : view(d, 0, block);
      break;
    case CollectiveKind::Barrier:
      break;
  }
  // The collective's record: where this rank's input and result are, what they hold.
  const comm::CollectiveRecord& rec = comm::collective_record(op);
  const comm::CollectiveShape shape{r, n, root, block, rop_};
  const comm::CollectiveCall call{op, sv, rv, rop_, root, 0};
  const TensorView input = comm::reference_input(call, r), result = comm::reference_result(call, r);
  auto init = [&] {
    comm::poison(result);  // first: in place, the input lies inside the result
    rec.init(shape, input);
  };
  // On the GPU: the same views at the same offsets of the device buffers (in-place layouts kept).
  auto to_device = [&](const TensorView& v) {
    if (v.data == nullptr) return v;
    const char* p = static_cast<const char*>(v.data);
    const auto send_bytes = static_cast<std::ptrdiff_t>(send_.count() * sizeof(double));
    char* base = (p >= s && p < s + send_bytes) ? reinterpret_cast<char*>(dev_send_.data()) + (p - s)
                                                : reinterpret_cast<char*>(dev_recv_.data()) + (p - d);
    return TensorView(base, v.count, v.dtype, core::Device::Cuda);
  };
  const TensorView dsv = on_device ? to_device(sv) : sv, drv = on_device ? to_device(rv) : rv;
  // Every byte a cell touches lies below (count + n) elements: in 8-byte words, rounded up.
  const std::int64_t span = ((count + n) * es_ + 7) / 8;
  auto launch = [&] {
    switch (op) {
      case CollectiveKind::AllReduce:
        c.all_reduce(dsv, drv, rop_);
        break;
      case CollectiveKind::Broadcast:
        c.broadcast(drv, root);
        break;
      case CollectiveKind::AllGather:
        c.all_gather(dsv, drv);
        break;
      case CollectiveKind::ReduceScatter:
        c.reduce_scatter(dsv, drv, rop_);
        break;
      case CollectiveKind::Gather:
        c.gather(dsv, drv, root);
        break;
      case CollectiveKind::Scatter:
        c.scatter(dsv, drv, root);
        break;
      case CollectiveKind::Barrier:
        c.barrier();
        break;
    }
  };
  std::vector<double> times;
  std::int64_t wrong = 0;
  for (int it = 0; it < warmup_ + iters_; ++it) {
    init();
    if (on_device) {  // synchronous copies: the data is on the GPU before the barrier
      dev_send_.from_host(send_.data(), 0, span);
      dev_recv_.from_host(recv_.data(), 0, span);
    }
    world_barrier(mpi);  // the communicator under test is idle: sync calls only
    core::Stopwatch sw;
    launch();  // a synchronous collective: returns when the GPU has finished it too
    const double us = sw.elapsed_s() * 1e6;
    if (on_device) {
      dev_send_.to_host(send_.data(), 0, span);  // scatter's in-place result lives in the send buffer
      dev_recv_.to_host(recv_.data(), 0, span);
    }
    if (check_ != 0) wrong += rec.check(shape, result).wrong;
    if (it >= warmup_) times.push_back(us);
  }
  const double t = median(times);
  double tmax = 0;
  max_over_ranks(mpi, &t, &tmax, 1);
  Result res;
  res.backend = backend_label(c);
  res.bytes = count * es_;
  res.count = count;
  res.in_place = in_place;
  res.time_us = tmax;
  res.algbw = tmax > 0 ? static_cast<double>(res.bytes) / (tmax * 1e3) : 0;  // GB/s
  res.busbw = res.algbw * rec.bus_factor(n);
  res.wrong = sum_over_ranks(mpi, wrong);
  return res;
}

// Busy compute on the caller's thread for about `ms` milliseconds: FMAs on a small array, checking
// the clock every few thousand operations. Touches no communicator.
double compute_for_ms(double ms) {
  static float a[1024];
  core::Stopwatch sw;
  float acc = 0;
  while (sw.elapsed_ms() < ms) {
    for (int i = 0; i < 1024; ++i) a[i] = a[i] * 0.999f + 1.0f;
    acc += a[0];
  }
  return acc;
}

void BenchCollectivesCommand::run_overlap(const comm::MpiRuntime& mpi,
                                          std::vector<std::unique_ptr<Communicator>>& comms) {
  // f32, whatever --dtype says: the progress of an async all-reduce, not of a type.
  constexpr std::int64_t kOverlapElemBytes = sizeof(float);
  const std::int64_t count = overlap_bytes_ / kOverlapElemBytes;
  std::vector<double> ts;
  for (const auto& t : split_list(overlap_ms_)) ts.push_back(parse_overlap_ms(t));
  if (mpi.rank() == 0) {
    std::printf("#\n# Async progress: all_reduce of %" PRId64
                " bytes issued async, caller computes T ms, then wait().\n",
                count * kOverlapElemBytes);
    std::printf(
        "# comm = sync all-reduce time; wait = time spent in wait() after compute; progressed = 1 - wait/comm\n");
    std::printf(
        "# (1 = finished during the compute, 0 = progressed only inside wait). medians of %d, max over ranks.\n",
        iters_);
    std::printf("# %-8s %9s %10s %10s %10s %10s\n", "backend", "T_ms", "comm_ms", "wait_ms", "total_ms", "progressed");
  }
  volatile double sink = 0;
  for (std::size_t i = 0; i < comms.size(); ++i) {
    auto& c = comms[i];
    const int r = c->rank(), n = c->size();
    const bool dev = on_device(split_list(backends_)[i]);
    const TensorView host(send_.data(), count, core::DType::F32);
    const TensorView buf = dev ? TensorView(dev_send_.data(), count, core::DType::F32, core::Device::Cuda) : host;
    const comm::CollectiveShape shape{r, n, 0, count, ReduceOp::Sum};
    const std::int64_t words = (count * kOverlapElemBytes + 7) / 8;  // of the double buffers
    auto fill = [&] {
      comm::collective_record(CollectiveKind::AllReduce).init(shape, host);
      if (dev) dev_send_.from_host(send_.data(), 0, words);
    };
    std::vector<double> comm_t;
    for (int it = 0; it < warmup_ + iters_; ++it) {
      fill();
      world_barrier(mpi);
      core::Stopwatch sw;
      c->all_reduce(buf, ReduceOp::Sum);
      if (it >= warmup_) comm_t.push_back(sw.elapsed_ms());
    }
    const double comm_ms = median(comm_t);
    double comm_max = 0;
    max_over_ranks(mpi, &comm_ms, &comm_max, 1);
    for (double T : ts) {
      std::vector<double> waits, totals;
      for (int it = 0; it < warmup_ + iters_; ++it) {
        fill();
        world_barrier(mpi);
        core::Stopwatch sw;
        comm::Work w = c->all_reduce(buf, ReduceOp::Sum, comm::Mode::Async);
        sink = sink + compute_for_ms(T);
        core::Stopwatch ws;
        w.wait();
        if (it >= warmup_) {
          waits.push_back(ws.elapsed_ms());
          totals.push_back(sw.elapsed_ms());
        }
      }
      const double mine[2] = {median(waits), median(totals)};
      double worst[2] = {0, 0};
      max_over_ranks(mpi, mine, worst, 2);
      if (mpi.rank() == 0) {
        std::printf("  %-8s %9.1f %10.3f %10.3f %10.3f %10.2f\n", backend_label(*c).c_str(), T, comm_max, worst[0],
                    worst[1], comm_max > 0 ? 1.0 - worst[0] / comm_max : 0.0);
      }
    }
  }
}

int BenchCollectivesCommand::run(const comm::MpiRuntime& mpi) {
  rop_ = redop_ == "max" ? ReduceOp::Max : redop_ == "min" ? ReduceOp::Min : ReduceOp::Sum;
  // Every rank knows the rank count: one agreed verdict, no hang.
  const int exact_ranks = is_16bit(dt_) ? comm::kMaxExact16Ranks : comm::kMaxExactRanks;
  MDDP_AGREED_USAGE_CHECK(check_ == 0 || mpi.size() <= exact_ranks,
                          "bench collectives checks every result exactly, which its "
                              << dtype_ << " inputs allow up to " << exact_ranks << " ranks; this job has "
                              << mpi.size() << " (-c 0: no check)");
  const std::vector<std::string> backend_names = split_list(backends_);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (const auto& b : backend_names) {
    comms.push_back(make_communicator(backend_of(b), mpi));
    comms.back()->set_debug_sync(has_dsync_suffix(b));
  }
  const int n = mpi.size();
  // 8-byte words for the largest cell of --dtype (count + n elements) and the async-progress check's f32.
  const std::int64_t cap = (std::max(max_bytes_ + n * es_, overlap_bytes_ + n * std::int64_t{4}) + 7) / 8;
  send_.resize(cap);
  recv_.resize(cap);
  bool any_device = false;
  for (const auto& b : backend_names) any_device = any_device || on_device(b);
  if (any_device) {
    // The rank's GPU as `train --device cuda` picks it (one agreed error when there is none).
    ComputeChoice gpu = choose_compute("cuda", "nccl", true, false, 1, mpi);
    gpu_ = std::move(gpu.ops);
    dev_send_ = kernels::OpsBuffer<double>(*gpu_, cap);
    dev_recv_ = kernels::OpsBuffer<double>(*gpu_, cap);
    for (auto& c : comms) c->set_compute_stream(gpu_->stream());
  }
  const int rank = mpi.rank();
  if (rank == 0) {
    std::printf("# microddp bench collectives: %d rank(s) on %s, %s\n", n, mpi.hostname().c_str(),
                mpi.library_version().c_str());
    std::printf("# sizes %" PRId64 " .. %" PRId64 " bytes x%d, warmup %d, iters %d, dtype %s, redop %s, backends %s\n",
                min_bytes_, max_bytes_, factor_, warmup_, iters_, dtype_.c_str(), redop_.c_str(), backends_.c_str());
    std::printf(
        "# time = max over ranks of each rank's per-iteration median (us); algbw = size/time, busbw = algbw x\n");
    std::printf(
        "# factor (allreduce 2(n-1)/n; allgather, reducescatter, gather, scatter (n-1)/n; broadcast 1), GB/s.\n");
    if (check_ != 0) {
      std::printf(
          "# every iteration's result is checked exactly; #wrong = wrong elements over all iterations and "
          "ranks.\n");
    } else {
      std::printf("# -c 0: results are not checked (#wrong N/A).\n");
    }
    std::printf("# memory:");
    for (const auto& b : backend_names) std::printf(" %s=%s", b.c_str(), on_device(b) ? "gpu" : "host");
    if (gpu_) std::printf(" (gpu: %s)", gpu_->description().c_str());
    std::printf("\n");
  }
  std::vector<Result> all;
  for (const auto& op_name : split_list(ops_)) {
    const CollectiveKind op = kOps.at(op_name);
    if (rank == 0) {
      std::printf("#\n# %-15s %12s %8s %6s %-8s %s %s\n", "", "", "", "", "", "       out-of-place                  ",
                  "        in-place");
      std::printf("# %-13s %12s %12s %8s %6s %-8s %9s %8s %8s %7s %9s %8s %8s %7s\n", "op", "size(B)", "count", "type",
                  "redop", "backend", "time(us)", "algbw", "busbw", "#wrong", "time(us)", "algbw", "busbw", "#wrong");
    }
    for (std::int64_t bytes = min_bytes_; bytes <= max_bytes_; bytes *= factor_) {
      for (auto& c : comms) {
        const bool dev = on_device(backend_names[static_cast<std::size_t>(&c - comms.data())]);
        Result oop = run_cell(mpi, *c, op, bytes, false, dev);
        Result ip = run_cell(mpi, *c, op, bytes, true, dev);
        if (oop.count == 0) continue;  // block collectives: fewer elements than ranks
        oop.op = ip.op = op_name;
        const bool reduces = op == CollectiveKind::AllReduce || op == CollectiveKind::ReduceScatter;
        if (rank == 0) {
          const std::string w_oop = check_ != 0 ? std::to_string(oop.wrong) : "N/A";
          const std::string w_ip = check_ != 0 ? std::to_string(ip.wrong) : "N/A";
          std::printf("  %-13s %12" PRId64 " %12" PRId64 " %8s %6s %-8s %9.1f %8.3f %8.3f %7s %9.1f %8.3f %8.3f %7s\n",
                      op_name.c_str(), oop.bytes, oop.count, dtype_.c_str(), reduces ? redop_.c_str() : "none",
                      oop.backend.c_str(), oop.time_us, oop.algbw, oop.busbw, w_oop.c_str(), ip.time_us, ip.algbw,
                      ip.busbw, w_ip.c_str());
          std::fflush(stdout);
        }
        all.push_back(oop);
        all.push_back(ip);
      }
    }
  }
  // Footer: per backend, average busbw; and the ratios to the first backend (how backends compare).
  std::int64_t wrong_total = 0;
  for (const auto& r : all) wrong_total += r.wrong;
  if (rank == 0) {
    if (check_ != 0) {
      std::printf("#\n# Out of bounds values : %" PRId64 " %s\n", wrong_total, wrong_total == 0 ? "OK" : "FAILED");
    } else {
      std::printf("#\n# Out of bounds values : N/A (-c 0: not checked)\n");
    }
    const std::string& base = backend_names.front();
    for (const auto& op_name : split_list(ops_)) {
      for (const auto& b : backend_names) {
        double sum = 0, big = 0, small = 0;
        int cnt = 0, nbig = 0, nsmall = 0;
        for (const auto& r : all) {
          if (r.op != op_name || r.backend != b) continue;
          sum += r.busbw;
          ++cnt;
          for (const auto& q : all) {  // same cell of the baseline backend
            if (q.op != r.op || q.backend != base || q.bytes != r.bytes || q.in_place != r.in_place) continue;
            if (r.bytes >= (1 << 20) && q.busbw > 0) big += std::log(r.busbw / q.busbw), ++nbig;
            if (r.bytes <= 4096 && q.time_us > 0) small += std::log(r.time_us / q.time_us), ++nsmall;
          }
        }
        std::printf("# %-13s %-8s avg busbw %8.3f GB/s", op_name.c_str(), b.c_str(), cnt ? sum / cnt : 0.0);
        if (b != base) {
          if (nbig) std::printf("  busbw/%s (>= 1 MiB, geomean) %.3f", base.c_str(), std::exp(big / nbig));
          if (nsmall) std::printf("  time/%s (<= 4 KiB, geomean) %.3f", base.c_str(), std::exp(small / nsmall));
        }
        std::printf("\n");
      }
    }
  }
  if (overlap_bytes_ > 0) run_overlap(mpi, comms);
  if (rank == 0 && !csv_.empty()) {
    std::ofstream f(csv_);
    MDDP_CHECK(f.good(), "cannot write " << csv_);
    f << "op,backend,ranks,bytes,count,dtype,in_place,time_us,algbw_gbs,busbw_gbs,wrong\n";
    for (const auto& r : all) {
      f << r.op << "," << r.backend << "," << n << "," << r.bytes << "," << r.count << "," << dtype_ << ","
        << (r.in_place ? 1 : 0) << "," << r.time_us << "," << r.algbw << "," << r.busbw << ","
        << (check_ != 0 ? std::to_string(r.wrong) : "NA") << "\n";
    }
  }
  if (rank == 0 && !json_.empty()) {
    std::ofstream f(json_);
    MDDP_CHECK(f.good(), "cannot write " << json_);
    f << "{\"ranks\": " << n << ", \"iters\": " << iters_ << ", \"warmup\": " << warmup_ << ", \"dtype\": \"" << dtype_
      << "\", \"checked\": " << (check_ != 0 ? "true" : "false")
      << ", \"time\": \"max over ranks of per-iteration median\", \"rows\": [\n";
    for (std::size_t i = 0; i < all.size(); ++i) {
      const auto& r = all[i];
      f << "  {\"op\": \"" << r.op << "\", \"backend\": \"" << r.backend << "\", \"bytes\": " << r.bytes
        << ", \"count\": " << r.count << ", \"dtype\": \"" << dtype_
        << "\", \"in_place\": " << (r.in_place ? "true" : "false") << ", \"time_us\": " << r.time_us
        << ", \"algbw_gbs\": " << r.algbw << ", \"busbw_gbs\": " << r.busbw
        << ", \"wrong\": " << (check_ != 0 ? std::to_string(r.wrong) : "null") << "}"
        << (i + 1 < all.size() ? ",\n" : "\n");
    }
    f << "]}\n";
  }
  if (rank == 0) std::printf("# %s\n", wrong_total == 0 ? "OK" : "FAILED");
  return wrong_total == 0 ? 0 : 1;
}

}  // namespace

std::unique_ptr<Command> register_bench_collectives(CLI::App& bench, CLI::App*& sub) {
  sub = bench.add_subcommand("collectives", "nccl-tests-style sweep of collectives over backends side by side");
  return std::make_unique<BenchCollectivesCommand>(sub);
}

}  // namespace microddp::app
