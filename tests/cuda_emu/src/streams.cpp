// streams.cpp — stream workers, legacy-stream ordering, host waits (see streams.hpp).
#include "streams.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "config.hpp"
#include "counters.hpp"
#include "errors.hpp"

namespace cuda_emu {

namespace {

thread_local bool t_on_worker = false;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool all_done(const std::vector<CompletionPtr>& cs) {
  return std::all_of(cs.begin(), cs.end(), [](const CompletionPtr& c) { return c->done; });
}

void add_pending(std::vector<CompletionPtr>& out, const CompletionPtr& c) {
  if (c != nullptr && !c->done) out.push_back(c);
}

}  // namespace

struct Engine::Device {
  std::shared_ptr<CUstream_st> legacy;
  // Every stream of the device whose worker still runs (destroyed ones until they drain).
  std::vector<std::shared_ptr<CUstream_st>> streams;
};

Engine& Engine::get() {
  // Never destroyed: detached workers may still wait on its mutex while the process exits.
  static Engine* engine = new Engine();
  return *engine;
}

bool Engine::on_worker_thread() { return t_on_worker; }

Engine::Device& Engine::device_state(int device) {
  const auto index = static_cast<std::size_t>(device);
  if (devices_.size() <= index) devices_.resize(index + 1);
  if (devices_[index] == nullptr) devices_[index] = std::make_unique<Device>();
  return *devices_[index];
}

std::shared_ptr<CUstream_st> Engine::start_locked(int device, bool legacy, bool blocking, int priority) {
  auto s = std::make_shared<CUstream_st>();
  s->device = device;
  s->legacy = legacy;
  s->blocking = blocking;
  s->priority = priority;
  device_state(device).streams.push_back(s);
  // Detached: the worker owns the stream and ends when it is destroyed and drained.
  std::thread([this, s] { worker(s); }).detach();
  return s;
}

CUstream_st* Engine::legacy_locked(int device) {
  Device& d = device_state(device);
  if (d.legacy == nullptr) d.legacy = start_locked(device, /*legacy=*/true, /*blocking=*/true, 0);
  return d.legacy.get();
}

cudaStream_t Engine::create(int device, bool blocking, int priority) {
  const std::lock_guard<std::mutex> lock(mutex_);
  CUstream_st* s = start_locked(device, /*legacy=*/false, blocking, priority).get();
  live_.push_back(s);
  return s;
}

cudaError_t Engine::destroy(cudaStream_t stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = std::find(live_.begin(), live_.end(), stream);
  if (it == live_.end()) return cudaErrorInvalidResourceHandle;
  live_.erase(it);
  stream->destroyed = true;
  stream->wake.notify_one();
  return cudaSuccess;
}

CUstream_st* Engine::resolve(cudaStream_t stream, int current_device) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (stream == nullptr || stream == cudaStreamLegacy) return legacy_locked(current_device);
  if (std::find(live_.begin(), live_.end(), stream) == live_.end()) return nullptr;
  return stream;
}

std::vector<CompletionPtr> Engine::implicit_deps_locked(CUstream_st* stream) {
  std::vector<CompletionPtr> deps;
  if (!stream->blocking) return deps;
  Device& d = device_state(stream->device);
  if (stream->legacy) {
    for (const auto& other : d.streams) {
      if (other.get() != stream && other->blocking) add_pending(deps, other->tail);
    }
  } else if (d.legacy != nullptr) {
    add_pending(deps, d.legacy->tail);
  }
  return deps;
}

std::vector<CompletionPtr> Engine::implicit_deps(CUstream_st* stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CompletionPtr> deps = implicit_deps_locked(stream);
  add_pending(deps, stream->tail);
  return deps;
}

CompletionPtr Engine::enqueue(CUstream_st* stream, std::string what, std::function<void()> run,
                              std::vector<CompletionPtr> deps, std::function<void()> after) {
  const std::lock_guard<std::mutex> lock(mutex_);
  Operation op;
  op.what = std::move(what);
  op.run = std::move(run);
  op.after = std::move(after);
  op.deps = std::move(deps);
  for (CompletionPtr& c : implicit_deps_locked(stream)) op.deps.push_back(std::move(c));
  op.done = std::make_shared<Completion>();
  stream->tail = op.done;
  CompletionPtr done = op.done;
  stream->queue.push_back(std::move(op));
  stream->wake.notify_one();
  return done;
}

void Engine::worker(std::shared_ptr<CUstream_st> s) {
  t_on_worker = true;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    s->wake.wait(lock, [&] { return !s->queue.empty() || s->destroyed; });
    if (s->queue.empty()) break;  // destroyed and drained
    Operation op = std::move(s->queue.front());
    s->queue.pop_front();
    completed_.wait(lock, [&] { return all_done(op.deps); });
    lock.unlock();
    const unsigned delay_us = tuning().stream_delay_us.load(std::memory_order_relaxed);
    if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    // A faulted device runs nothing more (a GPU context is unusable after a fault).
    if (op.run && device_fault(s->device) == cudaSuccess) {
      try {
        op.run();
      } catch (const std::exception& e) {
        raise_fault(s->device, cudaErrorLaunchFailure, op.what + ": " + e.what());
      } catch (...) {
        raise_fault(s->device, cudaErrorLaunchFailure, op.what + ": unknown exception");
      }
    }
    if (op.after) op.after();
    op.run = nullptr;  // release what the operation captured before reporting it done
    op.after = nullptr;
    lock.lock();
    op.done->done = true;
    op.done->done_ns = now_ns();
    completed_.notify_all();
  }
  Device& d = device_state(s->device);
  d.streams.erase(std::remove(d.streams.begin(), d.streams.end(), s), d.streams.end());
}

void Engine::wait(const CompletionPtr& c, const char* what) { wait_all({c}, what); }

void Engine::complete(const CompletionPtr& c) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (c == nullptr || c->done) return;
  c->done = true;
  c->done_ns = now_ns();
  completed_.notify_all();
}

void Engine::await(const CompletionPtr& c) {
  std::unique_lock<std::mutex> lock(mutex_);
  completed_.wait(lock, [&] { return c == nullptr || c->done; });
}

void Engine::wait_all(const std::vector<CompletionPtr>& cs, const char* what) {
  counters::host_sync(what);
  std::unique_lock<std::mutex> lock(mutex_);
  completed_.wait(lock, [&] {
    return std::all_of(cs.begin(), cs.end(), [](const CompletionPtr& c) { return c == nullptr || c->done; });
  });
}

bool Engine::is_done(const CompletionPtr& c) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return c == nullptr || c->done;
}

std::int64_t Engine::done_ns(const CompletionPtr& c) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return c->done_ns;
}

CompletionPtr Engine::tail(CUstream_st* stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return stream->tail;
}

std::vector<CompletionPtr> Engine::device_tails(int device) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CompletionPtr> out;
  for (const auto& s : device_state(device).streams) add_pending(out, s->tail);
  return out;
}

}  // namespace cuda_emu
