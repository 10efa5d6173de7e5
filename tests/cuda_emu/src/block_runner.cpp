// block_runner.cpp — fiber scheduling of one block and the synchronisation primitives (see
// block_runner.hpp). Also defines CUDA's index variables (device_api.hpp).
#include "block_runner.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "counters.hpp"
#include "thread_order.hpp"

__thread uint3 threadIdx = {0, 0, 0};
__thread uint3 blockIdx = {0, 0, 0};
__thread dim3 blockDim = dim3(1, 1, 1);
__thread dim3 gridDim = dim3(1, 1, 1);

namespace cuda_emu {

namespace {

constexpr unsigned kWarp = 32;  // CUDA's warp size (warpSize)

enum class Mode { None, Plain, Fibers };
thread_local Mode t_mode = Mode::None;
thread_local BlockRunner* t_runner = nullptr;

struct ModeScope {
  explicit ModeScope(Mode m) { t_mode = m; }
  ~ModeScope() { t_mode = Mode::None; }
  ModeScope(const ModeScope&) = delete;
  ModeScope& operator=(const ModeScope&) = delete;
};

uint3 thread_index(unsigned linear, dim3 block) {
  return uint3{linear % block.x, (linear / block.x) % block.y, linear / (block.x * block.y)};
}

std::string hex(unsigned v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

BlockRunner& runner_for_primitive(const char* primitive) {
  if (t_mode == Mode::Plain) throw PlainModeSync(primitive);
  if (t_mode != Mode::Fibers || t_runner == nullptr) {
    std::fprintf(stderr, "cuda_emu: %s called outside a kernel\n", primitive);
    std::abort();
  }
  return *t_runner;
}

}  // namespace

BlockRunner& BlockRunner::for_this_thread() {
  thread_local BlockRunner runner;
  return runner;
}

const char* BlockRunner::primitive_name(device::WarpOp op) {
  switch (op) {
    case device::WarpOp::Sync:
      return "__syncwarp";
    case device::WarpOp::ShuffleIndex:
      return "__shfl_sync";
    case device::WarpOp::ShuffleUp:
      return "__shfl_up_sync";
    case device::WarpOp::ShuffleDown:
      return "__shfl_down_sync";
    case device::WarpOp::ShuffleXor:
      return "__shfl_xor_sync";
  }
  return "?";
}

std::string BlockRunner::name(const Thread& t) const {
  std::ostringstream os;
  os << "thread (" << t.index.x << "," << t.index.y << "," << t.index.z << ") [warp " << t.linear / kWarp << " lane "
     << t.linear % kWarp << "] of block (" << blockIdx.x << "," << blockIdx.y << "," << blockIdx.z << ")";
  return os.str();
}

void BlockRunner::fiber_main(void* p) {
  auto* t = static_cast<Thread*>(p);
  BlockRunner* r = t->runner;
  try {
    r->body_->run_thread();
    t->state = State::Done;
  } catch (const KernelFault& f) {  // a device fault raised by the thread itself (a misaligned atomic)
    r->fault_ = f.what();
    r->fault_error_ = f.error;
    t->state = State::Faulted;
  } catch (const std::exception& e) {
    r->fault_ = r->name(*t) + " threw: " + e.what();
    t->state = State::Faulted;
  } catch (...) {
    r->fault_ = r->name(*t) + " threw an exception";
    t->state = State::Faulted;
  }
  switch_context(t->fiber->context(), r->scheduler_);
  std::abort();  // a finished thread is never resumed
}

void BlockRunner::yield(Thread& t, State state) {
  t.state = state;
  ++calls_;
  switch_context(t.fiber->context(), scheduler_);
}

void BlockRunner::fault_here(Thread& t, const std::string& message) {
  fault_ = name(t) + ": " + message;
  t.state = State::Faulted;
  switch_context(t.fiber->context(), scheduler_);
  std::abort();  // a faulted thread is never resumed
}

std::uint64_t BlockRunner::run_fibers(const device::KernelBody& body, const BlockSpec& spec) {
  count_ = spec.thread_count;
  if (threads_.size() < count_) threads_.resize(count_);
  const std::size_t stack_bytes = config().fiber_stack_bytes;
  for (unsigned i = 0; i < count_; ++i) {
    Thread& t = threads_[i];
    if (t.fiber == nullptr) t.fiber = std::make_unique<Fiber>(stack_bytes);
    t.index = thread_index(i, spec.block);
    t.linear = i;
    t.state = State::Runnable;
    t.runner = this;
    t.fiber->reset(&BlockRunner::fiber_main, &t);
  }
  body_ = &body;
  calls_ = 0;
  fault_.clear();
  fault_error_ = cudaErrorLaunchFailure;
  t_runner = this;
  const ModeScope mode(Mode::Fibers);
  unsigned done = 0;
  for (std::uint64_t pass = 0;; ++pass) {
    make_order(order_, count_, spec.schedule, spec.seed, mix(spec.salt, pass));
    for (const unsigned i : order_) {
      Thread& t = threads_[i];
      if (t.state != State::Runnable) continue;
      threadIdx = t.index;
      running_ = &t;
      switch_context(scheduler_, t.fiber->context());
      running_ = nullptr;
      if (t.state == State::Faulted) throw KernelFault(fault_error_, fault_);
      if (t.state == State::Done) ++done;
    }
    if (done == count_) return calls_;
    if (complete_warp_exchanges()) continue;
    // No warp exchange can complete: the block moves on only if every thread waits at the barrier.
    bool all_at_barrier = true;
    for (unsigned i = 0; i < count_; ++i) all_at_barrier = all_at_barrier && threads_[i].state == State::AtBarrier;
    if (!all_at_barrier) diagnose_stall();
    for (unsigned i = 0; i < count_; ++i) threads_[i].state = State::Runnable;
  }
}

void BlockRunner::run_plain(const device::KernelBody& body, const BlockSpec& spec) {
  make_order(order_, spec.thread_count, spec.schedule, spec.seed, spec.salt);
  plain_ids_.resize(spec.thread_count);
  for (unsigned i = 0; i < spec.thread_count; ++i) plain_ids_[i] = thread_index(order_[i], spec.block);
  t_runner = this;
  const ModeScope mode(Mode::Plain);
  body.run_threads(plain_ids_.data(), plain_ids_.size());
}

void BlockRunner::sync_threads() {
  Thread& t = *running_;
  yield(t, State::AtBarrier);
}

std::uint64_t BlockRunner::warp_exchange(device::WarpOp op, unsigned mask, std::uint64_t value, int arg, int width) {
  Thread& t = *running_;
  const unsigned lane = t.linear % kWarp;
  if ((mask & (1u << lane)) == 0) {
    fault_here(t, std::string(primitive_name(op)) + " with mask " + hex(mask) +
                      ", which does not name the calling lane " + std::to_string(lane));
  }
  if (op != device::WarpOp::Sync && (width < 1 || width > static_cast<int>(kWarp) || (width & (width - 1)) != 0)) {
    fault_here(t, std::string(primitive_name(op)) + " with width " + std::to_string(width) +
                      " (must be a power of two in [1, 32])");
  }
  t.request = Request{op, mask, arg, op == device::WarpOp::Sync ? static_cast<int>(kWarp) : width, value};
  yield(t, State::AtWarp);
  return t.result;
}

bool BlockRunner::complete_warp_exchanges() {
  bool progress = false;
  for (unsigned base = 0; base < count_; base += kWarp) {
    const unsigned lanes = count_ - base < kWarp ? count_ - base : kWarp;
    for (unsigned l = 0; l < lanes; ++l) {
      Thread& t = threads_[base + l];
      if (t.state != State::AtWarp) continue;
      const Request& r = t.request;
      // Complete only if every lane of the mask waits here with the same request.
      bool complete = true;
      for (unsigned m = 0; m < kWarp && complete; ++m) {
        if ((r.mask & (1u << m)) == 0) continue;
        if (m >= lanes) {
          fault_ = name(t) + ": " + primitive_name(r.op) + " with mask " + hex(r.mask) + " names lane " +
                   std::to_string(m) + ", which does not exist (the block has " + std::to_string(count_) + " threads)";
          throw KernelFault(cudaErrorLaunchFailure, fault_);
        }
        const Thread& u = threads_[base + m];
        complete =
            u.state == State::AtWarp && u.request.op == r.op && u.request.mask == r.mask && u.request.width == r.width;
      }
      if (!complete) continue;
      // Every lane of the group reads its source lane's value, all taken at the call.
      const unsigned mask = r.mask;
      for (unsigned m = 0; m < lanes; ++m) {
        if ((mask & (1u << m)) == 0) continue;
        Thread& u = threads_[base + m];
        const auto w = static_cast<unsigned>(u.request.width);
        const unsigned segment = m & ~(w - 1);
        unsigned src = m;
        switch (u.request.op) {
          case device::WarpOp::Sync:
            break;
          case device::WarpOp::ShuffleIndex:
            src = segment + (static_cast<unsigned>(u.request.arg) & (w - 1));
            break;
          case device::WarpOp::ShuffleUp: {
            const long s = static_cast<long>(m) - u.request.arg;
            if (s >= static_cast<long>(segment)) src = static_cast<unsigned>(s);
            break;
          }
          case device::WarpOp::ShuffleDown: {
            const long s = static_cast<long>(m) + u.request.arg;
            if (s < static_cast<long>(segment + w)) src = static_cast<unsigned>(s);
            break;
          }
          case device::WarpOp::ShuffleXor: {
            // A lane may read an earlier group, never a later one (that returns its own value).
            const unsigned s = m ^ static_cast<unsigned>(u.request.arg);
            if (s < segment + w) src = s;
            break;
          }
        }
        if (src != m && (src >= kWarp || (mask & (1u << src)) == 0)) {
          fault_ = name(u) + ": " + primitive_name(u.request.op) + " reads lane " + std::to_string(src) +
                   ", which is not in the mask " + hex(mask) + " (its value would be undefined)";
          throw KernelFault(cudaErrorLaunchFailure, fault_);
        }
        u.result = threads_[base + src].request.value;
      }
      for (unsigned m = 0; m < lanes; ++m) {
        if ((mask & (1u << m)) != 0) threads_[base + m].state = State::Runnable;
      }
      progress = true;
    }
  }
  return progress;
}

void BlockRunner::diagnose_stall() {
  std::ostringstream os;
  // A warp exchange that cannot complete: name a lane it waits for and what that lane does.
  for (unsigned i = 0; i < count_; ++i) {
    const Thread& t = threads_[i];
    if (t.state != State::AtWarp) continue;
    const unsigned base = i / kWarp * kWarp;
    for (unsigned m = 0; m < kWarp; ++m) {
      if ((t.request.mask & (1u << m)) == 0) continue;
      const Thread& u = threads_[base + m];
      if (u.state == State::AtWarp && u.request.op == t.request.op && u.request.mask == t.request.mask &&
          u.request.width == t.request.width) {
        continue;
      }
      os << "divergent warp synchronisation: " << name(t) << " waits in " << primitive_name(t.request.op) << " (mask "
         << hex(t.request.mask) << ") for lane " << m << ", which ";
      if (u.state == State::Done) {
        os << "has exited";
      } else if (u.state == State::AtBarrier) {
        os << "waits at __syncthreads()";
      } else {
        os << "waits in " << primitive_name(u.request.op) << " (mask " << hex(u.request.mask) << ")";
      }
      fault_ = os.str();
      throw KernelFault(cudaErrorLaunchFailure, fault_);
    }
  }
  // Otherwise some threads wait at the barrier while others have exited.
  const Thread* waiting = nullptr;
  const Thread* exited = nullptr;
  unsigned n_waiting = 0, n_exited = 0;
  for (unsigned i = 0; i < count_; ++i) {
    if (threads_[i].state == State::AtBarrier) {
      ++n_waiting;
      if (waiting == nullptr) waiting = &threads_[i];
    } else if (threads_[i].state == State::Done) {
      ++n_exited;
      if (exited == nullptr) exited = &threads_[i];
    }
  }
  os << "divergent __syncthreads(): " << n_waiting << " thread(s) wait at the barrier (e.g. "
     << (waiting != nullptr ? name(*waiting) : "?") << ") while " << n_exited
     << " have exited without reaching it (e.g. " << (exited != nullptr ? name(*exited) : "?") << ")";
  fault_ = os.str();
  throw KernelFault(cudaErrorLaunchFailure, fault_);
}

namespace device {

void sync_threads() { runner_for_primitive("__syncthreads()").sync_threads(); }

std::uint64_t warp_exchange(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width) {
  BlockRunner& r = runner_for_primitive(op == WarpOp::Sync ? "__syncwarp()" : "a warp shuffle");
  return r.warp_exchange(op, mask, value, arg, width);
}

void atomic_access(const void* address, std::size_t bytes, const char* primitive) {
  if (t_mode == Mode::None) {
    std::fprintf(stderr, "cuda_emu: %s called outside a kernel\n", primitive);
    std::abort();
  }
  if (reinterpret_cast<std::uintptr_t>(address) % bytes != 0) {
    std::ostringstream os;
    os << "thread (" << threadIdx.x << "," << threadIdx.y << "," << threadIdx.z << ") of block (" << blockIdx.x << ","
       << blockIdx.y << "," << blockIdx.z << "): " << primitive << " on " << address << ", which is not aligned to its "
       << bytes << "-byte operand (a misaligned address on a GPU)";
    throw KernelFault(cudaErrorMisalignedAddress, os.str());
  }
  counters::atomic_operation();
}

}  // namespace device

}  // namespace cuda_emu
