// collective_reference.cpp — the per-collective records (collective_reference.hpp): which closed form
// each collective's input and result follow, typed for every dtype, and the bus factors.
#include "comm/collective_reference.hpp"

#include <cstring>
#include <iterator>

#include "core/error.hpp"
#include "kernels/elementwise.hpp"

namespace microddp::comm {

namespace {

using core::DType;
using core::TensorView;

// Element i of this rank's input, as an integer (exact in every dtype, see the header).
std::int64_t input_element(CollectiveKind kind, const CollectiveShape& s, std::int64_t i) {
  switch (kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::ReduceScatter:
      return reduce_input(s.rank, i, s.ranks);
    default:
      return data_value(s.rank, i, s.ranks);  // broadcast and scatter only init at the root
  }
}

// Element i of this rank's result.
template <typename T>
T expected_element(CollectiveKind kind, const CollectiveShape& s, std::int64_t i) {
  const std::int64_t c = s.count;
  switch (kind) {
    case CollectiveKind::AllReduce:
      return reduce_expected<T>(s.op, s.ranks, i);
    case CollectiveKind::ReduceScatter:
      return reduce_expected<T>(s.op, s.ranks, s.rank * c + i);
    case CollectiveKind::Broadcast:
      return static_cast<T>(data_value(s.root, i, s.ranks));
    case CollectiveKind::Scatter:
      return static_cast<T>(data_value(s.root, s.rank * c + i, s.ranks));
    case CollectiveKind::Gather:
    case CollectiveKind::AllGather:
      return static_cast<T>(data_value(static_cast<int>(i / c), i % c, s.ranks));
    case CollectiveKind::Barrier:
      break;
  }
  return T{};
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <CollectiveKind K, typename T>
void init_typed(const CollectiveShape& s, TensorView v) {
  T* p = static_cast<T*>(v.data);
  for (std::int64_t i = 0; i < v.count; ++i) p[i] = static_cast<T>(input_element(K, s, i));
}

template <CollectiveKind K, typename T>
CheckResult check_typed(const CollectiveShape& s, TensorView v) {
  CheckResult r;
  const T* p = static_cast<const T*>(v.data);
  for (std::int64_t i = 0; i < v.count; ++i) {
    const T want = expected_element<T>(K, s, i);
    if (same_bits(p[i], want)) continue;
    if (r.wrong++ == 0) {
      r.first_bad = i;
      r.first_got = static_cast<double>(p[i]);
      r.first_want = static_cast<double>(want);
    }
  }
  return r;
}

// ---- 16-bit floats: their own inputs (collective_reference.hpp), stored as their bits ----
bool reduces(CollectiveKind kind) { return kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter; }
kernels::Wire16 wire_format(DType t) { return t == DType::F16 ? kernels::Wire16::F16 : kernels::Wire16::BF16; }

template <CollectiveKind K>
void init16(const CollectiveShape& s, TensorView v) {
  const kernels::Wire16 f = wire_format(v.dtype);
  auto* p = static_cast<std::uint16_t*>(v.data);
  for (std::int64_t i = 0; i < v.count; ++i) {
    p[i] = reduces(K) ? kernels::wire16_encode(f, static_cast<float>(reduce_input16(s.rank, i, s.ranks)))
                      : data_bits16(input_element(K, s, i));
  }
}

template <CollectiveKind K>
std::uint16_t expected16(const CollectiveShape& s, std::int64_t i, kernels::Wire16 f) {
  const std::int64_t c = s.count;
  switch (K) {
    case CollectiveKind::AllReduce:
      return kernels::wire16_encode(f, static_cast<float>(reduce_expected16(s.op, s.ranks, i)));
    case CollectiveKind::ReduceScatter:
      return kernels::wire16_encode(f, static_cast<float>(reduce_expected16(s.op, s.ranks, s.rank * c + i)));
    default:
      // The data movement collectives: the bits expected_element gives as an integer.
      return data_bits16(expected_element<std::int64_t>(K, s, i));
  }
}

template <CollectiveKind K>
CheckResult check16(const CollectiveShape& s, TensorView v) {
  const kernels::Wire16 f = wire_format(v.dtype);
  CheckResult r;
  const auto* p = static_cast<const std::uint16_t*>(v.data);
  for (std::int64_t i = 0; i < v.count; ++i) {
    const std::uint16_t want = expected16<K>(s, i, f);
    if (p[i] == want) continue;
    if (r.wrong++ == 0) {
      r.first_bad = i;
      r.first_got = reduces(K) ? kernels::wire16_decode(f, p[i]) : p[i];  // values; moved data: bits
      r.first_want = reduces(K) ? kernels::wire16_decode(f, want) : want;
    }
  }
  return r;
}

template <CollectiveKind K>
void init(const CollectiveShape& s, TensorView v) {
  MDDP_CHECK(v.count == 0 || v.device == core::Device::Host, "collective reference: inputs are written on the host");
  switch (v.dtype) {
    case DType::F32:
      return init_typed<K, float>(s, v);
    case DType::F64:
      return init_typed<K, double>(s, v);
    case DType::I32:
      return init_typed<K, std::int32_t>(s, v);
    case DType::I64:
      return init_typed<K, std::int64_t>(s, v);
    case DType::F16:
    case DType::BF16:
      return init16<K>(s, v);
  }
  MDDP_CHECK(false, "collective reference: no reference inputs for " << core::dtype_name(v.dtype));
}

template <CollectiveKind K>
CheckResult check(const CollectiveShape& s, TensorView v) {
  MDDP_CHECK(v.count == 0 || v.device == core::Device::Host, "collective reference: results are checked on the host");
  switch (v.dtype) {
    case DType::F32:
      return check_typed<K, float>(s, v);
    case DType::F64:
      return check_typed<K, double>(s, v);
    case DType::I32:
      return check_typed<K, std::int32_t>(s, v);
    case DType::I64:
      return check_typed<K, std::int64_t>(s, v);
    case DType::F16:
    case DType::BF16:
      return check16<K>(s, v);
  }
  MDDP_CHECK(false, "collective reference: no reference results for " << core::dtype_name(v.dtype));
  return {};
}

void init_nothing(const CollectiveShape&, TensorView) {}
CheckResult check_nothing(const CollectiveShape&, TensorView) { return {}; }

// nccl-tests' factors: the per-link traffic of a bandwidth-optimal algorithm relative to the size.
double all_reduce_factor(int n) { return 2.0 * (n - 1) / n; }
double one_pass_factor(int n) { return static_cast<double>(n - 1) / n; }
double broadcast_factor(int) { return 1.0; }
double no_data_factor(int) { return 0.0; }

// Indexed by CollectiveKind.
constexpr CollectiveRecord kRecords[] = {
    {CollectiveKind::AllReduce, init<CollectiveKind::AllReduce>, check<CollectiveKind::AllReduce>, all_reduce_factor},
    {CollectiveKind::Barrier, init_nothing, check_nothing, no_data_factor},
    {CollectiveKind::Broadcast, init<CollectiveKind::Broadcast>, check<CollectiveKind::Broadcast>, broadcast_factor},
    {CollectiveKind::Scatter, init<CollectiveKind::Scatter>, check<CollectiveKind::Scatter>, one_pass_factor},
    {CollectiveKind::Gather, init<CollectiveKind::Gather>, check<CollectiveKind::Gather>, one_pass_factor},
    {CollectiveKind::AllGather, init<CollectiveKind::AllGather>, check<CollectiveKind::AllGather>, one_pass_factor},
    {CollectiveKind::ReduceScatter, init<CollectiveKind::ReduceScatter>, check<CollectiveKind::ReduceScatter>,
     one_pass_factor},
};

}  // namespace

const CollectiveRecord& collective_record(CollectiveKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  MDDP_CHECK(i < std::size(kRecords) && kRecords[i].kind == kind, "no reference record for collective kind " << i);
  return kRecords[i];
}

TensorView reference_input(const CollectiveCall& call, int rank) {
  switch (call.kind) {
    case CollectiveKind::Barrier:
      return {};
    case CollectiveKind::Broadcast:
      return rank == call.root ? call.recv : TensorView();  // the buffer
    case CollectiveKind::Scatter:
      return rank == call.root ? call.send : TensorView();
    default:
      return call.send;
  }
}

TensorView reference_result(const CollectiveCall& call, int rank) {
  switch (call.kind) {
    case CollectiveKind::Barrier:
      return {};
    case CollectiveKind::Gather:
      return rank == call.root ? call.recv : TensorView();
    default:
      return call.recv;
  }
}

void poison(TensorView v) {
  if (v.count > 0) std::memset(v.data, kPoisonByte, static_cast<std::size_t>(v.bytes()));
}

}  // namespace microddp::comm
