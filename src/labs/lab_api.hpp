// lab_api.hpp — the functions the course's labs ask for (docs/labs/README.md), and what their code
// may use. A lab's starter file (docs/labs/NN-name/*.cpp) defines one of these functions; the
// program calls it through a seam (`manual --average lab`, `--comm lab-naive`, `--comm lab-ring`,
// `--strategy lab`, `--strategy lab-overlap | lab-bucketed | lab-zero1` (lab_strategies.hpp),
// `--comm lab-sync`, `microddp lab-model`, `--grad-compression lab-powersgd` (lab_powersgd.hpp), `--comm lab-hier`,
// `microddp lab-bench`), and the lab's grader (tests/labs) checks it. Reference solutions: tests/labs/solutions
// (read them after).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "labs/lab_comm.hpp"

namespace microddp::labs {

// Lab 01: combine the gradients of the model replicas of `microddp manual` by hand. replicas[r]
// points to replica r's flat gradient buffer (count floats), computed with the loss divided by the
// GLOBAL batch size. Afterwards every replica's buffer holds the combined gradient, element by
// element the sum over replicas added in replica order: ((g_0 + g_1) + g_2) + ...
void combine_replica_gradients(std::span<float* const> replicas, std::int64_t count);

// Lab 02: sum `data` (count floats on every rank) over all ranks, in place, by gathering every
// rank's buffer on rank 0, adding, and sending the sum back to every rank.
void naive_all_reduce(LabComm& comm, float* data, std::int64_t count);

// Lab 03: the same sum with the ring algorithm (reduce-scatter, then all-gather, around a ring).
void ring_all_reduce(LabComm& comm, float* data, std::int64_t count);

// Lab 07 (docs/labs/07-sync-primitives): the primitives the trainer uses around training; they run
// inside the program with `--comm lab-sync` (lab_backend.hpp). Buffer conventions are those of
// comm::CollectiveCall (comm/types.hpp) with floats.
// Copies root's `count` floats in `data` to every rank's `data` along a binomial tree: with virtual
// rank v = (rank - root) mod n, v receives from v - lowbit(v) and sends to v + m for every power of
// two m < lowbit(v) (the root: every m < n) with v + m < n.
void binomial_broadcast(LabComm& comm, float* data, std::int64_t count, int root);
// Every rank's `count` floats in `send` to `root`, which stores rank i's at recv[i*count, (i+1)*count).
// recv: n*count floats on the root, nullptr on every other rank. In place on the root when
// send == recv + root*count (its own block is already where it belongs).
void linear_gather(LabComm& comm, const float* send, std::int64_t count, float* recv, int root);
// No rank returns before every rank has called it: ceil(log2 n) rounds; in round k rank r sends an
// empty message to r + 2^k and receives one from r - 2^k (mod n).
void dissemination_barrier(LabComm& comm);

// Lab 08 (docs/labs/08-performance-model): the alpha-beta model of the ring all-reduce, fitted to
// measurements; `microddp lab-model` prints it next to src/perf's on real measurements.
struct LabAlphaBeta {
  double alpha_s = 0;          // latency per message (s)
  double beta_s_per_byte = 0;  // inverse bandwidth (s/byte)
};
struct LabTiming {  // one measured all-reduce
  int ranks = 0;
  double bytes = 0;
  double seconds = 0;  // > 0
};
// T = 2(n-1)·α + 2(n-1)/n·bytes·β; 0 for one rank.
double ring_all_reduce_time(const LabAlphaBeta& m, int ranks, double bytes);
// α, β minimising Σ ((T_model - seconds) / seconds)² over the points (least squares of the relative
// error); points with ranks < 2 carry no information about α or β and are skipped.
LabAlphaBeta fit_ring_all_reduce(const std::vector<LabTiming>& points);
// The smallest rows per rank b >= 1 at which `ranks` ranks (>= 2), each computing b rows and then
// all-reducing grad_bytes with the ring, finish a step of n·b rows sooner than one rank computing all
// of them: compute_s_per_row·b + T(ranks, grad_bytes) < compute_s_per_row·n·b.
std::int64_t break_even_rows_per_rank(const LabAlphaBeta& m, int ranks, double grad_bytes, double compute_s_per_row);

// Lab 04: one parameter's gradient, a slice of the flat gradient buffer.
struct LabGrad {
  std::string_view name;  // "layer_03.weight"
  float* data = nullptr;
  std::int64_t count = 0;  // floats
};

class LabSync;

// Lab 04: what naive_data_parallel_sync may use — this rank's gradients, who it is, and one
// blocking all-reduce of the program's real communicator (--comm). Nothing else.
class GradSyncContext {
 public:
  // Every parameter's gradient on this rank, in gradient-ready order (the order backward finished
  // them: the last layer first). Every rank has the same list.
  std::span<const LabGrad> grads() const { return grads_; }
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // Sums `count` floats at `data` over all ranks, in place; returns when done (blocking). Every
  // rank must make the same calls in the same order (each call is one collective). `data` must lie
  // inside the gradients (a UsageError otherwise).
  void all_reduce_sum(float* data, std::int64_t count);

  // For the grader: the all_reduce_sum calls of the last sync, in call order (capacity: a few per
  // gradient; calls_made() counts them all).
  struct Call {
    const float* data = nullptr;
    std::int64_t count = 0;
  };
  const std::vector<Call>& calls() const { return calls_; }
  std::int64_t calls_made() const { return calls_made_; }

 private:
  friend class LabSync;
  explicit GradSyncContext(LabSync& owner) : owner_(owner) {}
  LabSync& owner_;
  std::vector<LabGrad> grads_;
  int rank_ = 0, world_size_ = 1;
  std::vector<Call> calls_;
  std::int64_t calls_made_ = 0;
};

// Lab 04: naive data parallelism. Called after backward on every rank (`--strategy lab`); returns
// when every gradient in ctx.grads() holds what the production `naive` strategy leaves there.
void naive_data_parallel_sync(GradSyncContext& ctx);

// ---- Lab 05: hooks and overlap ------------------------------------------------------------------

// A gradient that has just become ready, as a hook sees it.
struct ReadyGrad {
  int index = 0;           // gradient-ready order: 0 is the first ready (the output layer's bias)
  std::string_view name;   // "layer_03.bias"
  std::int64_t count = 0;  // floats
};

class OverlapComm;

// The handle of one asynchronous all-reduce (PyTorch: what all_reduce(..., async_op=True) returns;
// microddp: comm::Work). Cheap to copy; a default-constructed one has nothing to wait for.
class LabWork {
 public:
  LabWork() = default;
  // Blocks until this all-reduce has completed: the gradient then holds the sum over all ranks.
  // Waiting again later returns at once.
  void wait() const;

 private:
  friend class OverlapComm;
  LabWork(OverlapComm* comm, std::int64_t id) : comm_(comm), id_(id) {}
  OverlapComm* comm_ = nullptr;
  std::int64_t id_ = -1;
};

// All lab 05's hooks may call: who this rank is, and one asynchronous all-reduce of a gradient.
// (The program's implementation, lab_hooks.hpp, also records when each launch and wait happens:
// that is how the grader sees whether communication overlapped backward.)
class OverlapComm {
 public:
  virtual ~OverlapComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Starts the all-reduce (sum over all ranks, in place) of `grad`'s gradient and returns at once:
  // it runs on the communication thread while this thread goes on with backward. Every rank must
  // launch the same all-reduces in the same order (they do, if each is launched from its hook).
  virtual LabWork all_reduce_async(const ReadyGrad& grad) = 0;

 protected:
  static LabWork make_work(OverlapComm* comm, std::int64_t id) { return LabWork(comm, id); }
  virtual void wait_for(std::int64_t id) = 0;  // LabWork::wait()
  friend class LabWork;
};

inline void LabWork::wait() const {
  if (comm_ != nullptr) comm_->wait_for(id_);
}

// The hooks of a gradient-synchronisation strategy, as the trainer calls them in every step that
// synchronises (ddp/grad_sync.hpp: on_backward_begin, on_grad_ready, finish).
class GradHooks {
 public:
  virtual ~GradHooks() = default;
  // Before backward.
  virtual void backward_begin() = 0;
  // From inside backward, the moment `grad` is final (reverse layer order: index 0, 1, 2, ...).
  // Backward waits for this call to return before it computes the next layer.
  virtual void grad_ready(const ReadyGrad& grad) = 0;
  // After backward: return when every gradient holds the sum over all ranks.
  virtual void backward_end() = 0;
};

// Lab 05: the overlap strategy's hooks (`--strategy lab-overlap`).
std::unique_ptr<GradHooks> make_overlap_hooks(OverlapComm& comm);

// ---- Lab 06: bucketing --------------------------------------------------------------------------

// Bytes of one gradient element (fp32).
inline constexpr std::int64_t kGradElementBytes = 4;

// One parameter's gradient in the flat gradient buffer, which is laid out in gradient-ready order.
struct LabParam {
  std::string_view name;    // "layer_03.weight"
  std::int64_t offset = 0;  // elements from the start of the flat gradient buffer
  std::int64_t count = 0;   // elements
};

// One bucket: parameters [first_param, end_param) and the slice of the flat gradient buffer that
// holds them, [offset, offset + count) elements.
struct LabBucket {
  int first_param = 0, end_param = 0;
  std::int64_t offset = 0, count = 0;
};

// Lab 06: the bucket plan (`--strategy lab-bucketed`). `params` in gradient-ready order;
// cap_bytes > 0; first_cap_bytes: the first bucket's cap, 0 = the same as cap_bytes.
std::vector<LabBucket> plan_buckets(const std::vector<LabParam>& params, std::int64_t cap_bytes,
                                    std::int64_t first_cap_bytes);

// ---- Lab 09: ZeRO stage 1 (docs/labs/09-zero1) --------------------------------------------------

// Rank `rank`'s part of a flat buffer of `count` elements under ZeRO-1 with `world` ranks. The
// communicator's reduce-scatter and all-gather move equal blocks, one per rank (MPI's
// Reduce_scatter_block and Allgather, NCCL's ReduceScatter and AllGather), so the buffer is cut into
// `world` equal CHUNKS, as large as they can be, rank 0's first from element 0, and a TAIL: the
// fewer than `world` elements left over at the end, which every rank keeps and updates.
struct LabShard {
  std::int64_t chunk_begin = 0, chunk_count = 0;  // this rank's chunk: [chunk_begin, chunk_begin + chunk_count)
  std::int64_t tail_begin = 0, tail_count = 0;    // the tail: [tail_begin, tail_begin + tail_count), every rank's
  // Elements of each optimizer-state buffer this rank keeps: its chunk's, then the tail's.
  std::int64_t state_count() const { return chunk_count + tail_count; }
};

// Lab 09: the shard (count >= 0, world >= 1, 0 <= rank < world). The program calls it once, at
// start-up, and sizes this rank's optimizer state from it (state_count() elements per buffer).
LabShard zero1_shard(std::int64_t count, int world, int rank);

class LabZero1Sync;

// Lab 09: what zero1_reduce_gradients and zero1_update may use — the flat buffers, this rank's
// shard, three blocking collectives of the program's real communicator (--comm) and the trainer's
// optimizer on a range. Nothing else.
class Zero1Context {
 public:
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // zero1_shard(grads().size(), world_size(), rank()), as the program computed it at start-up.
  const LabShard& shard() const { return shard_; }
  // The flat buffers, up to the end of the last parameter (the alignment padding after it is left
  // out, so their size is whatever the model makes it). grads(): after backward, this rank's own
  // gradient (loss / GLOBAL batch: the sum over ranks is the global-batch gradient); backward
  // overwrites all of it in the next step. params(): the parameters, the same on every rank.
  std::span<float> grads() const { return grads_; }
  std::span<float> params() const { return params_; }

  // Blocking, on floats inside grads() or params() (a UsageError otherwise); every rank must make
  // the same calls in the same order (each call is one collective).
  // In place: data[0, world_size()*block_count) is this rank's input, block i being
  // data[i*block_count, (i+1)*block_count). Afterwards data[0, block_count) holds the sum over all
  // ranks of block rank() (the communicator's in-place convention); the rest of data is undefined.
  void reduce_scatter_sum(float* data, std::int64_t block_count);
  // Sums `count` floats at `data` over all ranks, in place.
  void all_reduce_sum(float* data, std::int64_t count);
  // In place: this rank's block data[rank()*block_count, (rank()+1)*block_count) goes to every rank;
  // afterwards block i of data[0, world_size()*block_count) holds rank i's block, for every i.
  void all_gather(float* data, std::int64_t block_count);
  // The trainer's optimizer (Adam unless --optimizer says otherwise), the same per-element formula
  // as replicated DDP's: updates params()[first, first + count) from the gradients grad[0, count)
  // (inside grads()) with elements [state_offset, state_offset + count) of this rank's optimizer
  // state, which holds shard().state_count() elements per buffer: the chunk's at [0, chunk_count),
  // the tail's at [chunk_count, state_count()) (checkpoints read it so). In zero1_update only.
  void adam_update(std::int64_t first, const float* grad, std::int64_t state_offset, std::int64_t count);

  // For the grader: this step's collectives, in call order (capacity: a few per step; calls_made()
  // counts them all).
  enum class Kind : std::uint8_t { ReduceScatter, AllReduce, AllGather };
  struct Call {
    Kind kind = Kind::AllReduce;
    const float* data = nullptr;
    std::int64_t count = 0;  // block_count (reduce-scatter, all-gather) or count (all-reduce)
  };
  const std::vector<Call>& calls() const { return calls_; }
  std::int64_t calls_made() const { return calls_made_; }

 private:
  friend class LabZero1Sync;
  explicit Zero1Context(LabZero1Sync& owner) : owner_(owner) {}
  LabZero1Sync& owner_;
  int rank_ = 0, world_size_ = 1;
  LabShard shard_;
  std::span<float> grads_, params_;
  std::vector<Call> calls_;
  std::int64_t calls_made_ = 0;
};

// Lab 09, after backward (the gradient sync's finish): returns when grads()[0, chunk_count) holds
// the sum over all ranks of the gradient of this rank's chunk (where the in-place
// reduce_scatter_sum leaves it) and grads() over the tail the summed tail.
void zero1_reduce_gradients(Zero1Context& ctx);
// Lab 09, the optimizer step (after the trainer checked the gradient norm and, with
// --clip-grad-norm, scaled both of those by the same factor on every rank): updates this rank's
// chunk and the tail with adam_update and returns when every rank's params() hold every rank's
// updated chunk.
void zero1_update(Zero1Context& ctx);

// ---- Lab 10: PowerSGD with error feedback (docs/labs/10-powersgd) -------------------------------

// One weight matrix as PowerSGD sees it in one step. Every matrix is row-major; r = rank.
struct LabMatrix {
  std::string_view name;  // "layer_01.weight"
  std::int64_t rows = 0, cols = 0;
  std::int64_t rank = 0;  // r = min(--powersgd-rank, rows, cols)
  // (rows, cols). In: this rank's gradient G. Out: the rank-r approximation of the SUM over ranks
  // of every rank's M (each rank's loss is already divided by the GLOBAL batch: nothing to divide).
  float* grad = nullptr;
  // (rows, cols), this rank's error feedback E (zero before the first step), kept between steps;
  // nullptr with --error-feedback off.
  float* residual = nullptr;
  float* p = nullptr;  // (rows, r): workspace for P, yours to use
  // (cols, r): Q, kept between steps (warm start; at the first step normal random, the same on
  // every rank). On return it must be the all-reduced Q, the same on every rank.
  float* q = nullptr;
};

class LabPowerSgdCompressor;

// Lab 10: what powersgd_step may use — who this rank is, one blocking all-reduce of the program's
// real communicator, and the production orthonormalisation. Nothing else.
class PowerSgdContext {
 public:
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // Sums `count` floats at `data` over all ranks, in place; returns when done. `data` must lie inside
  // the matrix's p or q (a UsageError otherwise); every rank must make the same calls in the same order.
  void all_reduce_sum(float* data, std::int64_t count);
  // Makes the columns of `p` (rows, cols; cols <= rows; inside the matrix's p) orthonormal: the
  // production Gram-Schmidt (ddp/compression/orthonormalize.hpp), deterministic, so ranks holding the
  // same bits get the same bits.
  void orthonormalize(float* p, std::int64_t rows, std::int64_t cols);

  // For the grader: this step's calls, in call order (capacity: a few per matrix; calls_made()
  // counts them all).
  enum class Kind : std::uint8_t { AllReduce, Orthonormalize };
  struct Call {
    Kind kind = Kind::AllReduce;
    int matrix = 0;  // which powersgd_step of the step (0, 1, ...)
    const float* data = nullptr;
    std::int64_t count = 0;  // floats: count, or rows * cols of orthonormalize
  };
  const std::vector<Call>& calls() const { return calls_; }
  std::int64_t calls_made() const { return calls_made_; }

 private:
  friend class LabPowerSgdCompressor;
  explicit PowerSgdContext(LabPowerSgdCompressor& owner) : owner_(owner) {}
  LabPowerSgdCompressor& owner_;
  int rank_ = 0, world_size_ = 1;
  std::vector<Call> calls_;
  std::int64_t calls_made_ = 0;
};

// Lab 10 (`--grad-compression lab-powersgd`): one PowerSGD step of one matrix, with error feedback
// when m.residual is set. Called on every rank for the same matrices in the same order, after
// backward; returns when m.grad holds the decoded approximation of the summed gradient, m.q the
// all-reduced Q and m.residual this rank's new error.
void powersgd_step(PowerSgdContext& ctx, const LabMatrix& m);
// ---- Lab 11: hierarchical all-reduce (docs/labs/11-hierarchical) --------------------------------

// Which ranks share a node, as the program found them (--comm lab-hier: the launcher's nodes, or
// MICRODDP_HIER_NODE_SIZES; the production backend `hier` computes them, hier_topology.hpp). Every
// rank gets the same.
struct LabNodes {
  // ranks[i]: node i's ranks (ranks of the LabComm) in ascending order; a rank's LOCAL RANK is its
  // index there. Nodes are ordered by their lowest rank; every rank is on exactly one node.
  std::vector<std::vector<int>> ranks;

  int count() const { return static_cast<int>(ranks.size()); }
  int node_of(int rank) const {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      for (int r : ranks[i]) {
        if (r == rank) return static_cast<int>(i);
      }
    }
    return -1;
  }
  int local_rank_of(int rank) const {
    for (const auto& node : ranks) {
      for (std::size_t l = 0; l < node.size(); ++l) {
        if (node[l] == rank) return static_cast<int>(l);
      }
    }
    return -1;
  }
};

// Lab 11: sum `data` (count floats on every rank) over all ranks, in place, sending as little as
// possible between nodes: reduce-scatter inside each node, all-reduce of each shard across nodes,
// all-gather inside each node (the production `hier`'s algorithm; the starter's comment gives the
// schedule). Runs inside the program as `--comm lab-hier`.
void hierarchical_all_reduce(LabComm& comm, const LabNodes& nodes, float* data, std::int64_t count);
// ---- Lab 12: benchmark an all-reduce (docs/labs/12-benchmark) ------------------------------------

// All measure_all_reduce may use: who this rank is, its clock, a barrier, the collective under test
// and the maximum over ranks. In the program (`microddp lab-bench`, lab_bench.hpp) they are the steady
// clock, MPI_Barrier and MPI_Allreduce(MAX) on the world and one all-reduce of the backend measured;
// the grader passes a fake whose all-reduce "takes" times it chose, different on every rank and in
// every call, so it knows the exact answer.
class LabBenchComm {
 public:
  virtual ~LabBenchComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Seconds on THIS rank's clock from an arbitrary origin: only the difference of two readings on the
  // same rank means anything (the ranks' clocks are not synchronised, nor started together).
  virtual double now_s() = 0;
  // Returns once every rank has called it. Not the communicator under test: it is not measured.
  virtual void barrier() = 0;
  // One blocking all-reduce (sum) of `bytes` bytes on the communicator under test: what is measured.
  // Every rank must make the same calls (each is one collective).
  virtual void all_reduce(std::int64_t bytes) = 0;
  // In place, element by element: values[i] becomes the maximum over ranks of values[i]. Every rank
  // passes the same number of values (one collective, not measured).
  virtual void max_over_ranks(std::span<double> values) = 0;
};

// How one size is measured (nccl-tests' -w, -n and -m; `microddp lab-bench -w -n -m`).
struct LabBenchSettings {
  int warmup = 5;  // untimed all-reduces before the first timed batch (>= 0)
  int reps = 20;   // timed batches; the time reported is their median (>= 1)
  int batch = 1;   // all-reduces per timed batch, back to back; batch time / batch = one all-reduce's (>= 1)
};

// What measure_all_reduce returns: the same on every rank.
struct LabBenchResult {
  double time_s = 0;     // the median over the reps of the slowest rank's time per all-reduce
  double algbw_gbs = 0;  // bytes / time_s, GB/s (1e9 bytes per second)
  double busbw_gbs = 0;  // algbw · 2(n-1)/n: nccl-tests' bus bandwidth of an all-reduce
};

// Lab 12: the time of an all-reduce of `bytes` bytes on `comm` as nccl-tests measures it (warm-up not
// timed, a barrier before each timed batch, the slowest rank's time, the median over repetitions),
// and its algorithm and bus bandwidths.
LabBenchResult measure_all_reduce(LabBenchComm& comm, std::int64_t bytes, const LabBenchSettings& settings);

// What an untouched starter calls: throws a usage error "lab <lab> is not done yet: write
// <function> in <file>" (the program and the grader print it).
[[noreturn]] void lab_todo(std::string_view lab, std::string_view function, std::string_view file);

}  // namespace microddp::labs
