// collective_checks.hpp — exactness checks for every collective, shared by the backend-generic
// suite (test_collectives.cpp), the mpi chunking test (test_mpi_chunking.cpp) and the GPU backends'
// suite (gpu/test_nccl_collectives.cpp).
//
// Habits from nccl-tests: inputs are integers, small enough to be exact in f32 (< 2^24), so every
// correct result is exact and compared BITWISE with a closed form; failures report #wrong. The
// inputs and closed forms are each collective's record in comm/collective_reference.hpp, the same
// ones `microddp bench collectives` checks its results with.
// Contract of run_case(): runs one collective synchronously on `comm` and returns what this rank
// saw: wrong elements (with the first one), changed guard elements around the receive buffer
// (poisoned with kPoison), a changed send buffer (out-of-place), and a hash of the result where all
// ranks must hold identical bytes. report() agrees on the outcome across ranks (one MPI_Allgather on
// MPI_COMM_WORLD, never on the communicator under test) so rank 0, the one that prints, reports
// every rank's failure. Call it only while the backend is idle (sync calls only): MPI runs with
// MPI_THREAD_SERIALIZED.
// Where the buffers live is a template parameter of the runners (run_case<Buf>): Guarded<T>, host
// memory, by default; a test may pass a class derived from Guarded<T> whose view() is elsewhere (device
// memory: tests/comm/gpu/test_nccl_collectives.cpp) and whose to_device()/to_host() move the whole
// guarded storage there and back around the collective, so inputs, guards and results are checked
// on the host exactly as for host buffers.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "comm/collective_reference.hpp"
#include "comm/communicator.hpp"
#include "core/hash.hpp"

namespace microddp::testing {

using comm::CollectiveKind;
using comm::Communicator;
using core::DType;
using core::ReduceOp;
using core::TensorView;

using comm::data_value;
using comm::reduce_expected;
using comm::reduce_input;

// Guard elements on each side of every receive buffer: catches off-by-a-block writes.
constexpr std::int64_t kGuard = 16;
// Poison byte: no value any case below can produce (collective_reference.hpp says why).
constexpr unsigned char kPoison = comm::kPoisonByte;

struct Case {
  CollectiveKind kind = CollectiveKind::AllReduce;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  std::int64_t count = 0;  // all_reduce/broadcast: the buffer; block collectives: the per-rank block c
  bool in_place = false;
  int root = 0;

  std::string describe() const {
    std::ostringstream os;
    os << comm::collective_name(kind) << " " << core::dtype_name(dtype);
    if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter)
      os << " " << core::reduce_op_name(op);
    os << " count=" << count;
    if (kind == CollectiveKind::Broadcast || kind == CollectiveKind::Scatter || kind == CollectiveKind::Gather) {
      os << " root=" << root;
    }
    if (kind != CollectiveKind::Broadcast && kind != CollectiveKind::Barrier)
      os << (in_place ? " in-place" : " out-of-place");
    return os.str();
  }
};

struct Outcome {
  std::int64_t wrong = 0;  // result elements that differ from the closed form
  std::int64_t first_bad = -1;
  double first_got = 0, first_want = 0;
  std::int64_t guard_bad = 0;     // changed guard elements
  std::int64_t send_changed = 0;  // changed send elements (out-of-place only)
  std::uint64_t hash = 0;         // of the result bytes, where all ranks must agree
  bool hashed = false;
};

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// ---- guarded, poisoned buffers ------------------------------------------------------------------

// T: the element's storage (std::uint16_t for the 16-bit floats, whose dtype the case names).
template <typename T>
class Guarded {
 public:
  Guarded(std::int64_t count, DType dtype)
      : count_(count), dtype_(dtype), storage_(static_cast<std::size_t>(count + 2 * kGuard)) {
    std::memset(static_cast<void*>(storage_.data()), kPoison, storage_.size() * sizeof(T));
  }
  // Count 0 views carry a null pointer: a backend that dereferences them crashes the test.
  T* data() { return count_ == 0 ? nullptr : storage_.data() + kGuard; }
  // What the collective gets (view) and what inits and checks read (host_view): the same host memory
  // here; see the file comment for buffers elsewhere.
  TensorView view() { return TensorView(data(), count_, dtype_); }
  TensorView view(std::int64_t offset, std::int64_t n) {
    return TensorView(count_ == 0 ? nullptr : data() + offset, n, dtype_);
  }
  TensorView host_view() { return Guarded::view(); }
  TensorView host_view(std::int64_t offset, std::int64_t n) { return Guarded::view(offset, n); }
  void to_device() {}
  void to_host() {}
  T& operator[](std::int64_t i) { return storage_[static_cast<std::size_t>(kGuard + i)]; }
  std::int64_t count() const { return count_; }

  std::int64_t guards_changed() const {
    T poison;
    std::memset(static_cast<void*>(&poison), kPoison, sizeof(T));
    std::int64_t bad = 0;
    for (std::int64_t g = 0; g < kGuard; ++g) {
      bad += !same_bits(storage_[static_cast<std::size_t>(g)], poison);
      bad += !same_bits(storage_[static_cast<std::size_t>(kGuard + count_ + g)], poison);
    }
    return bad;
  }

  std::uint64_t hash() {  // FNV-1a over the payload bytes
    return core::fnv1a64(storage_.data() + kGuard, static_cast<std::size_t>(count_) * sizeof(T));
  }
  // A copy of the payload, and how many payload elements differ (bitwise) from such a copy.
  std::vector<T> values() const {
    return std::vector<T>(storage_.begin() + kGuard, storage_.begin() + kGuard + count_);
  }
  std::int64_t changed_from(const std::vector<T>& before) const {
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < count_; ++i) {
      bad += !same_bits(storage_[static_cast<std::size_t>(kGuard + i)], before[static_cast<std::size_t>(i)]);
    }
    return bad;
  }

 protected:
  // The whole storage, guards included (a copy elsewhere moves all of it).
  T* storage() { return storage_.data(); }
  std::size_t storage_bytes() const { return storage_.size() * sizeof(T); }

 private:
  std::int64_t count_;
  DType dtype_;
  std::vector<T> storage_;
};

// This rank's instance of the case, and its result compared with the record's closed form.
inline comm::CollectiveShape shape_of(const Communicator& comm, const Case& k) {
  return comm::CollectiveShape{comm.rank(), comm.size(), k.root, k.count, k.op};
}
inline Outcome checked(const Case& k, const comm::CollectiveShape& s, TensorView result) {
  const comm::CheckResult c = comm::collective_record(k.kind).check(s, result);
  Outcome o;
  o.wrong = c.wrong;
  o.first_bad = c.first_bad;
  o.first_got = c.first_got;
  o.first_want = c.first_want;
  return o;
}

// ---- one runner per collective ------------------------------------------------------------------

// Each runner writes this rank's input with the record's init (collective_reference.hpp), runs the
// collective, and checks the result with the record's closed form, plus what only a test checks:
// guard elements, an unchanged send buffer (out of place), identical result bytes on every rank.

// Moves the buffers to where the collective reads them, and back (nothing for host buffers).
template <typename... B>
void to_device(B&... b) {
  (b.to_device(), ...);
}
template <typename... B>
void to_host(B&... b) {
  (b.to_host(), ...);
}

template <typename T, template <typename> class Buf = Guarded>
Outcome run_all_reduce(Communicator& comm, const Case& k) {
  const comm::CollectiveShape s = shape_of(comm, k);
  Buf<T> send(k.count, k.dtype), recv(k.in_place ? 0 : k.count, k.dtype);
  comm::collective_record(k.kind).init(s, send.host_view());
  const std::vector<T> sent = send.values();
  to_device(send, recv);
  comm.all_reduce(send.view(), k.in_place ? send.view() : recv.view(), k.op);
  to_host(send, recv);
  Buf<T>& out = k.in_place ? send : recv;
  Outcome o = checked(k, s, out.host_view());
  if (!k.in_place) o.send_changed = send.changed_from(sent);
  o.guard_bad = send.guards_changed() + recv.guards_changed();
  o.hash = out.hash();
  o.hashed = true;
  return o;
}

template <typename T, template <typename> class Buf = Guarded>
Outcome run_broadcast(Communicator& comm, const Case& k) {
  const comm::CollectiveShape s = shape_of(comm, k);
  Buf<T> buf(k.count, k.dtype);
  if (comm.rank() == k.root) comm::collective_record(k.kind).init(s, buf.host_view());
  to_device(buf);
  comm.broadcast(buf.view(), k.root);
  to_host(buf);
  Outcome o = checked(k, s, buf.host_view());
  o.guard_bad = buf.guards_changed();
  o.hash = buf.hash();
  o.hashed = true;
  return o;
}

template <typename T, template <typename> class Buf = Guarded>
Outcome run_scatter(Communicator& comm, const Case& k) {
  const comm::CollectiveShape s = shape_of(comm, k);
  const int n = comm.size();
  const std::int64_t c = k.count;
  const bool root = comm.rank() == k.root;
  // The root's n*c elements: block q goes to rank q; values depend on the root and the position.
  Buf<T> send(root ? n * c : 0, k.dtype);
  if (root) comm::collective_record(k.kind).init(s, send.host_view());
  const std::vector<T> sent = send.values();
  const bool in_place = root && k.in_place;
  Buf<T> recv(in_place ? 0 : c, k.dtype);
  to_device(send, recv);
  comm.scatter(root ? send.view() : TensorView(), in_place ? send.view(k.root * c, c) : recv.view(), k.root);
  to_host(send, recv);
  Outcome o = checked(k, s, in_place ? send.host_view(k.root * c, c) : recv.host_view());
  o.send_changed = send.changed_from(sent);
  o.guard_bad = send.guards_changed() + recv.guards_changed();
  return o;
}

template <typename T, template <typename> class Buf = Guarded>
Outcome run_gather(Communicator& comm, const Case& k) {
  const comm::CollectiveShape s = shape_of(comm, k);
  const int n = comm.size();
  const std::int64_t c = k.count;
  const bool root = comm.rank() == k.root;
  const bool in_place = root && k.in_place;
  Buf<T> recv(root ? n * c : 0, k.dtype);
  Buf<T> send(in_place ? 0 : c, k.dtype);
  comm::collective_record(k.kind).init(s, in_place ? recv.host_view(k.root * c, c) : send.host_view());
  const std::vector<T> sent = send.values();
  to_device(send, recv);
  // Non-roots pass an empty recv: the convention says it is ignored there.
  comm.gather(in_place ? recv.view(k.root * c, c) : send.view(), root ? recv.view() : TensorView(), k.root);
  to_host(send, recv);
  Outcome o = root ? checked(k, s, recv.host_view()) : Outcome{};
  o.send_changed = send.changed_from(sent);
  o.guard_bad = send.guards_changed() + recv.guards_changed();
  return o;
}

template <typename T, template <typename> class Buf = Guarded>
Outcome run_all_gather(Communicator& comm, const Case& k) {
  const comm::CollectiveShape s = shape_of(comm, k);
  const int r = comm.rank(), n = comm.size();
  const std::int64_t c = k.count;
  Buf<T> recv(n * c, k.dtype);
  Buf<T> send(k.in_place ? 0 : c, k.dtype);
  comm::collective_record(k.kind).init(s, k.in_place ? recv.host_view(r * c, c) : send.host_view());
  const std::vector<T> sent = send.values();
  to_device(send, recv);
  comm.all_gather(k.in_place ? recv.view(r * c, c) : send.view(), recv.view());
  to_host(send, recv);
  Outcome o = checked(k, s, recv.host_view());
  o.send_changed = send.changed_from(sent);
  o.guard_bad = send.guards_changed() + recv.guards_changed();
  o.hash = recv.hash();
  o.hashed = true;
  return o;
}

template <typename T, template <typename> class Buf = Guarded>
Outcome run_reduce_scatter(Communicator& comm, const Case& k) {
  const comm::CollectiveShape s = shape_of(comm, k);
  const int n = comm.size();
  const std::int64_t c = k.count;
  Buf<T> send(n * c, k.dtype);
  comm::collective_record(k.kind).init(s, send.host_view());
  const std::vector<T> sent = send.values();
  Buf<T> recv(k.in_place ? 0 : c, k.dtype);
  to_device(send, recv);
  comm.reduce_scatter(send.view(), k.in_place ? send.view(0, c) : recv.view(), k.op);
  to_host(send, recv);
  Outcome o = checked(k, s, k.in_place ? send.host_view(0, c) : recv.host_view());
  // In place, the send buffer beyond the first c elements is scratch (unspecified afterwards).
  if (!k.in_place) o.send_changed = send.changed_from(sent);
  o.guard_bad = send.guards_changed() + recv.guards_changed();
  return o;
}

template <typename T, template <typename> class Buf = Guarded>
Outcome run_typed(Communicator& comm, const Case& k) {
  switch (k.kind) {
    case CollectiveKind::AllReduce:
      return run_all_reduce<T, Buf>(comm, k);
    case CollectiveKind::Broadcast:
      return run_broadcast<T, Buf>(comm, k);
    case CollectiveKind::Scatter:
      return run_scatter<T, Buf>(comm, k);
    case CollectiveKind::Gather:
      return run_gather<T, Buf>(comm, k);
    case CollectiveKind::AllGather:
      return run_all_gather<T, Buf>(comm, k);
    case CollectiveKind::ReduceScatter:
      return run_reduce_scatter<T, Buf>(comm, k);
    case CollectiveKind::Barrier:
      comm.barrier();
      return Outcome{};
  }
  return Outcome{};
}

template <template <typename> class Buf = Guarded>
Outcome run_case(Communicator& comm, const Case& k) {
  switch (k.dtype) {
    case DType::F32:
      return run_typed<float, Buf>(comm, k);
    case DType::F64:
      return run_typed<double, Buf>(comm, k);
    case DType::I32:
      return run_typed<std::int32_t, Buf>(comm, k);
    case DType::I64:
      return run_typed<std::int64_t, Buf>(comm, k);
    case DType::F16:
    case DType::BF16:
      return run_typed<std::uint16_t, Buf>(comm, k);  // stored as their bits (collective_reference.hpp)
  }
  ADD_FAILURE() << "no collective check for dtype " << core::dtype_name(k.dtype);
  return Outcome{};
}

// Agrees on one case's outcome across ranks; records a failure (on every rank) naming each bad
// rank's #wrong, first wrong element, guard and send damage, and hash disagreement. Returns true if
// the case passed everywhere.
inline bool report(const Case& k, const Outcome& o) {
  constexpr int kFields = 8;
  std::int64_t mine[kFields] = {o.wrong, o.first_bad, 0, 0, o.guard_bad, o.send_changed, 0, o.hashed ? 1 : 0};
  std::memcpy(&mine[2], &o.first_got, sizeof(double));
  std::memcpy(&mine[3], &o.first_want, sizeof(double));
  std::memcpy(&mine[6], &o.hash, sizeof(std::uint64_t));
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<std::int64_t> all(static_cast<std::size_t>(kFields) * n);
  MPI_Allgather(mine, kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T, MPI_COMM_WORLD);
  std::ostringstream msg;
  bool ok = true;
  for (int q = 0; q < n; ++q) {
    const std::int64_t* f = &all[static_cast<std::size_t>(q) * kFields];
    const bool hash_differs = f[7] != 0 && all[7] != 0 && f[6] != all[6];
    if (f[0] == 0 && f[4] == 0 && f[5] == 0 && !hash_differs) continue;
    ok = false;
    double got = 0, want = 0;
    std::memcpy(&got, &f[2], sizeof(double));
    std::memcpy(&want, &f[3], sizeof(double));
    msg << "\n  rank " << q << ": #wrong " << f[0];
    if (f[0] != 0) msg << " (first at element " << f[1] << ": got " << got << ", want " << want << ")";
    if (f[4] != 0) msg << ", guard elements changed " << f[4];
    if (f[5] != 0) msg << ", send elements changed " << f[5];
    if (hash_differs) msg << ", result bytes differ from rank 0's";
  }
  if (!ok) ADD_FAILURE() << k.describe() << msg.str();
  return ok;
}

// ---- case lists ---------------------------------------------------------------------------------

// Element counts: empty, tiny, fewer than / not divisible by the ranks, around powers of two.
inline std::vector<std::int64_t> counts_for(int n, std::vector<int> pow2_exponents) {
  std::vector<std::int64_t> c = {0, 1, 2, 7, n - 1, n + 1};
  for (int k : pow2_exponents) {
    const std::int64_t p = std::int64_t{1} << k;
    c.insert(c.end(), {p - 1, p, p + 1});
  }
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  c.erase(std::remove_if(c.begin(), c.end(), [](std::int64_t v) { return v < 0; }), c.end());
  return c;
}

struct OpType {
  DType dtype;
  ReduceOp op;
};

// Mean only for floating point (the API rejects it for integers; see test_comm_errors.cpp).
inline std::vector<OpType> reduction_combos() {
  std::vector<OpType> v;
  for (DType t : {DType::F32, DType::F64, DType::I32}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean}) {
      if (op == ReduceOp::Mean && t == DType::I32) continue;
      v.push_back({t, op});
    }
  }
  return v;
}

inline std::vector<int> roots_for(int n) {
  std::vector<int> r = {0, n - 1, n / 2};
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

// Every combination of one collective kind over the given counts.
inline std::vector<Case> cases_for(CollectiveKind kind, int n, const std::vector<std::int64_t>& counts) {
  std::vector<Case> out;
  const DType kDtypes[] = {DType::F32, DType::F64, DType::I32};
  for (std::int64_t count : counts) {
    switch (kind) {
      case CollectiveKind::AllReduce:
      case CollectiveKind::ReduceScatter:
        for (const OpType& ot : reduction_combos()) {
          for (bool ip : {false, true}) out.push_back({kind, ot.dtype, ot.op, count, ip, 0});
        }
        break;
      case CollectiveKind::Broadcast:
        for (DType t : kDtypes) {
          for (int root : roots_for(n)) out.push_back({kind, t, ReduceOp::Sum, count, false, root});
        }
        break;
      case CollectiveKind::Scatter:
      case CollectiveKind::Gather:
        for (DType t : kDtypes) {
          for (int root : roots_for(n)) {
            for (bool ip : {false, true}) out.push_back({kind, t, ReduceOp::Sum, count, ip, root});
          }
        }
        break;
      case CollectiveKind::AllGather:
        for (DType t : kDtypes) {
          for (bool ip : {false, true}) out.push_back({kind, t, ReduceOp::Sum, count, ip, 0});
        }
        break;
      case CollectiveKind::Barrier:
        out.push_back({kind, DType::F32, ReduceOp::Sum, 0, false, 0});
        break;
    }
  }
  return out;
}

// The 16-bit floats (f16, bf16: `bench collectives --dtype half|bfloat16`, gradient compression's
// wire formats) through every collective: sum, max and min (Mean is refused for them), in place and
// out of place, every root. Their inputs are collective_reference.hpp's 16-bit ones.
inline std::vector<Case> cases_16bit(CollectiveKind kind, int n, const std::vector<std::int64_t>& counts) {
  std::vector<Case> out;
  for (const Case& k : cases_for(kind, n, counts)) {
    if (k.dtype != DType::F32 || k.op == ReduceOp::Mean) continue;  // one of each F32 case, re-typed
    for (DType t : {DType::F16, DType::BF16}) {
      Case c = k;
      c.dtype = t;
      out.push_back(c);
    }
  }
  return out;
}

// Runs the cases, reporting each failure; stops after `max_failures` failing cases so a broken
// backend does not print thousands of them.
template <template <typename> class Buf = Guarded>
void run_cases(Communicator& comm, const std::vector<Case>& cases, int max_failures = 10) {
  int failures = 0;
  for (const Case& k : cases) {
    if (!report(k, run_case<Buf>(comm, k)) && ++failures >= max_failures) {
      ADD_FAILURE() << "stopping after " << failures << " failing cases";
      return;
    }
  }
}

// Every rank issued the same collectives, so the sequence numbers agree (docs/design.md,
// "Invariants"): after a barrier on `comm`, this rank's count of issued collectives is compared with
// every other rank's (over MPI_COMM_WORLD). Returns this rank's count.
inline std::int64_t expect_same_sequence_on_every_rank(Communicator& comm) {
  comm.barrier();
  const auto mine = static_cast<std::int64_t>(comm.collectives_issued());
  std::int64_t lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);
  return mine;
}

}  // namespace microddp::testing
