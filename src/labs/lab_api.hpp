// lab_api.hpp — the functions the course's labs ask for (docs/labs/README.md), and what their code
// may use. A lab's starter file (docs/labs/NN-name/*.cpp) defines one of these functions; the
// program calls it through a seam (lab_backend.hpp: `--comm lab-naive`, `--comm lab-ring`), and the
// lab's grader (tests/labs) checks it. Reference solutions: tests/labs/solutions (read them after).
// Labs 05 and 06 run inside the trainer as strategies (`--strategy lab-overlap | lab-bucketed`,
// lab_strategies.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "labs/lab_comm.hpp"

namespace microddp::labs {

// Lab 02: sum `data` (count floats on every rank) over all ranks, in place, by gathering every
// rank's buffer on rank 0, adding, and sending the sum back to every rank.
void naive_all_reduce(LabComm& comm, float* data, std::int64_t count);

// Lab 03: the same sum with the ring algorithm (reduce-scatter, then all-gather, around a ring).
void ring_all_reduce(LabComm& comm, float* data, std::int64_t count);

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

// What an untouched starter calls: throws a usage error "lab <lab> is not done yet: write
// <function> in <file>" (the program and the grader print it).
[[noreturn]] void lab_todo(std::string_view lab, std::string_view function, std::string_view file);

}  // namespace microddp::labs
