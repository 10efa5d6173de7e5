// test_emu_nccl_collectives.cpp — exactness and stream semantics of the emulated NCCL, one process per
// rank (MPI launches them and broadcasts the unique id; ctest runs np 1, 2, 3, 4).
//   * Integer-valued inputs, so every result is exact and known: all-reduce, reduce-scatter, all-gather,
//     broadcast (every root), reduce (every root); every data type and op, sizes 0, 1, < ranks, not
//     divisible by the rank count, ~1M elements; in place and out of place in NCCL's layouts.
//   * Arbitrary floats: results equal a rank-order reference computed here, bit for bit, on every rank.
//   * Point-to-point: a bidirectional ring exchange of 2 x 16 MiB per rank in one group, an all-to-all
//     (self included) in one group, a gather built from one group against single sends.
//   * Stream semantics: calls return before their stream reaches them; operations of one communicator
//     run in issue order across streams; a group over two streams joins them.
//   * CUDA graphs: a collective captured in a graph is a node that every launch runs as a new operation
//     (in issue order with the eager ones, on the buffers' contents then); a group over two captured
//     streams is one node; a group over a capturing and a plain stream is refused, nothing launched.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "emu_nccl_mpi.hpp"
#include "emu_nccl_test_util.hpp"

namespace emu_test {
namespace {

constexpr std::size_t kLarge = 1000003;  // ~1M, prime: divisible by no rank count

// ---- integer-valued inputs and their exact results ------------------------------------------------

// Small integers chosen per op so that every partial result is exact in every type (|sum| <= 40,
// products <= 81 at 4 ranks: within int8, fp16 and bf16 precision).
double input_value(ncclRedOp_t op, ncclDataType_t t, int r, std::size_t i) {
  const bool u = is_unsigned(t);
  const auto ri = static_cast<std::size_t>(r);
  switch (op) {
    case ncclProd: {
      static constexpr double kSigned[] = {-2, -1, 1, 2};
      return u ? 1.0 + static_cast<double>((i * 5 + ri * 3) % 3) : kSigned[(i * 5 + ri * 3) % 4];
    }
    case ncclMax:
    case ncclMin:
      return static_cast<double>((i * 13 + ri * 5) % 21) - (u ? 0 : 10);
    default:
      return static_cast<double>((i * 7 + ri * 3) % 11) - (u ? 0 : 5);
  }
}

// value_of(q): rank q's input. (Callables are template parameters, not std::function: these run per
// element of ~1M-element buffers.)
template <typename ValueOf>
double exact_reduce(ncclRedOp_t op, ncclDataType_t t, int n, ValueOf value_of) {
  double acc = value_of(0);
  for (int q = 1; q < n; ++q) {
    const double v = value_of(q);
    switch (op) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  if (op != ncclAvg) return acc;
  // Avg = sum, then one division: integer division for integers, float division for fp16/bf16/fp32
  // (rounded to the type by put_element), double for fp64.
  if (!is_floating(t)) return static_cast<double>(static_cast<long long>(acc) / n);
  if (t == ncclFloat64) return acc / n;
  return static_cast<double>(static_cast<float>(acc) / static_cast<float>(n));
}

template <typename Value>
std::vector<unsigned char> encode(ncclDataType_t t, std::size_t count, Value value) {
  std::vector<unsigned char> out(count * element_bytes(t));
  for (std::size_t i = 0; i < count; ++i) put_element(t, out.data(), i, value(i));
  return out;
}

// First differing element, or -1.
long long first_difference(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want,
                           std::size_t element) {
  if (got.size() != want.size()) return 0;
  for (std::size_t off = 0; off < got.size(); off += element) {
    if (std::memcmp(got.data() + off, want.data() + off, element) != 0) return static_cast<long long>(off / element);
  }
  return -1;
}

std::vector<std::size_t> small_counts(int n) {
  std::vector<std::size_t> c = {0, 1, 7 * static_cast<std::size_t>(n) + 1};
  if (n > 2) c.push_back(static_cast<std::size_t>(n) - 1);  // fewer elements than ranks
  return c;
}

// Deterministic arbitrary floats in [-1, 1) with full mantissas.
double arbitrary_value(int r, std::size_t i) {
  std::uint64_t h = (static_cast<std::uint64_t>(r) << 40) ^ (i * 0x9E3779B97F4A7C15ULL);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return static_cast<double>(h >> 11) * 0x1p-52 - 1.0;
}

class EmuNccl : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(init_world_comm(&comm_), ncclSuccess) << ncclGetLastError(nullptr);
    stream_ = new Stream;
  }
  static void TearDownTestSuite() {
    delete stream_;
    EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess);
    comm_ = nullptr;
  }
  void TearDown() override {
    ncclResult_t async = ncclInternalError;
    ASSERT_EQ(ncclCommGetAsyncError(comm_, &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess) << ncclGetLastError(comm_);
  }
  static int n() { return world_size(); }
  static int me() { return world_rank(); }

  static ncclComm_t comm_;
  static Stream* stream_;
};
ncclComm_t EmuNccl::comm_ = nullptr;
Stream* EmuNccl::stream_ = nullptr;

#define EXPECT_SAME_BYTES(got, want, element, what)                                                         \
  do {                                                                                                      \
    const long long emu_at_ = first_difference((got), (want), (element));                                   \
    EXPECT_EQ(emu_at_, -1) << (what) << ": first wrong element " << emu_at_ << " on rank " << world_rank(); \
  } while (0)

// ---- all-reduce ------------------------------------------------------------------------------------

void check_all_reduce(ncclComm_t comm, cudaStream_t stream, ncclDataType_t t, ncclRedOp_t op, std::size_t count,
                      bool in_place) {
  const int n = world_size(), r = world_rank();
  const std::size_t es = element_bytes(t);
  const auto input = encode(t, count, [&](std::size_t i) { return input_value(op, t, r, i); });
  const auto want = encode(
      t, count, [&](std::size_t i) { return exact_reduce(op, t, n, [&](int q) { return input_value(op, t, q, i); }); });
  DeviceBuffer send(count * es), recv(count * es);
  send.upload(input.data(), input.size());
  const DeviceBuffer& out = in_place ? send : recv;
  EMU_NCCL_OK(ncclAllReduce(send.get(), out.get(), count, t, op, comm, stream));
  EMU_CUDA_OK(cudaStreamSynchronize(stream));
  const std::string what = std::string("all-reduce ") + type_name(t) + " " + op_label(op) + " count " +
                           std::to_string(count) + (in_place ? " in place" : "");
  EXPECT_SAME_BYTES(out.download_all(), want, es, what);
}

TEST_F(EmuNccl, AllReduceEveryTypeOpAndSmallSize) {
  for (ncclDataType_t t : kAllTypes) {
    for (ncclRedOp_t op : kAllOps) {
      for (std::size_t count : small_counts(n())) {
        for (bool in_place : {false, true}) check_all_reduce(comm_, *stream_, t, op, count, in_place);
      }
    }
  }
}

// ~1M elements: every type (Sum), Max and Avg (float32), in place once. Kept to these 13 cases: at np 4
// on 2 busy cores each costs up to several hundred ms (every op and in-place form is covered at the
// small sizes above, on the same code paths).
TEST_F(EmuNccl, AllReduceLarge) {
  for (ncclDataType_t t : kAllTypes) check_all_reduce(comm_, *stream_, t, ncclSum, kLarge, false);
  for (ncclRedOp_t op : {ncclMax, ncclAvg}) check_all_reduce(comm_, *stream_, ncclFloat32, op, kLarge, false);
  check_all_reduce(comm_, *stream_, ncclBfloat16, ncclSum, kLarge, true);
}

// Arbitrary floats: the result is the rank-order sum ((x0 + x1) + x2) + ... in the accumulation type
// (float for fp16/bf16/fp32, rounded once), identical on every rank.
TEST_F(EmuNccl, AllReduceSumsInRankOrderBitwise) {
  constexpr std::size_t kCount = 100003;
  for (ncclDataType_t t : {ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64}) {
    const std::size_t es = element_bytes(t);
    auto stored = [&](int q, std::size_t i) {  // the input as the type holds it
      const double v = arbitrary_value(q, i);
      switch (t) {
        case ncclFloat16:
          return static_cast<double>(ref_half_to_float(ref_half(static_cast<float>(v))));
        case ncclBfloat16:
          return static_cast<double>(ref_bf16_to_float(ref_bf16(static_cast<float>(v))));
        case ncclFloat32:
          return static_cast<double>(static_cast<float>(v));
        default:
          return v;
      }
    };
    const auto input = encode(t, kCount, [&](std::size_t i) { return stored(me(), i); });
    const auto want = encode(t, kCount, [&](std::size_t i) {
      if (t == ncclFloat64) {
        double acc = stored(0, i);
        for (int q = 1; q < n(); ++q) acc += stored(q, i);
        return acc;
      }
      float acc = static_cast<float>(stored(0, i));
      for (int q = 1; q < n(); ++q) acc += static_cast<float>(stored(q, i));
      return static_cast<double>(acc);
    });
    DeviceBuffer buf(kCount * es);
    buf.upload(input.data(), input.size());
    EMU_NCCL_OK(ncclAllReduce(buf.get(), buf.get(), kCount, t, ncclSum, comm_, *stream_));
    stream_->sync();
    const auto got = buf.download_all();
    EXPECT_SAME_BYTES(got, want, es, std::string("rank-order sum ") + type_name(t));
    EXPECT_TRUE(same_on_all_ranks(fnv1a(got))) << type_name(t) << ": ranks got different bits";
  }
}

// ---- reduce-scatter ----------------------------------------------------------------------------------

void check_reduce_scatter(ncclComm_t comm, cudaStream_t stream, ncclDataType_t t, ncclRedOp_t op, std::size_t rc,
                          bool in_place) {
  const int n = world_size(), r = world_rank();
  const std::size_t es = element_bytes(t), total = rc * static_cast<std::size_t>(n);
  const auto input = encode(t, total, [&](std::size_t i) { return input_value(op, t, r, i); });
  const auto want = encode(t, rc, [&](std::size_t j) {
    return exact_reduce(op, t, n, [&](int q) { return input_value(op, t, q, static_cast<std::size_t>(r) * rc + j); });
  });
  DeviceBuffer send(total * es), recv(rc * es);
  send.upload(input.data(), input.size());
  // NCCL's in-place reduce-scatter: recvbuff == sendbuff + rank * recvcount.
  char* out = in_place ? send.bytes_at(static_cast<std::size_t>(r) * rc * es) : static_cast<char*>(recv.get());
  EMU_NCCL_OK(ncclReduceScatter(send.get(), out, rc, t, op, comm, stream));
  EMU_CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<unsigned char> got(rc * es);
  if (!got.empty()) {
    EMU_CUDA_OK(cudaMemcpy(got.data(), out, got.size(), cudaMemcpyDeviceToHost));
  }
  EXPECT_SAME_BYTES(got, want, es,
                    std::string("reduce-scatter ") + type_name(t) + " " + op_label(op) + " recvcount " +
                        std::to_string(rc) + (in_place ? " in place" : ""));
}

TEST_F(EmuNccl, ReduceScatterExact) {
  for (ncclDataType_t t : kAllTypes) {
    for (std::size_t rc : small_counts(n())) {
      for (bool in_place : {false, true}) check_reduce_scatter(comm_, *stream_, t, ncclSum, rc, in_place);
    }
  }
  for (ncclDataType_t t : {ncclInt32, ncclFloat16, ncclFloat32}) {
    for (ncclRedOp_t op : kAllOps) {
      for (bool in_place : {false, true}) check_reduce_scatter(comm_, *stream_, t, op, 13, in_place);
    }
  }
  for (bool in_place : {false, true}) check_reduce_scatter(comm_, *stream_, ncclFloat32, ncclSum, kLarge / 4, in_place);
}

// ---- all-gather ----------------------------------------------------------------------------------------

TEST_F(EmuNccl, AllGatherExact) {
  std::vector<std::size_t> counts = small_counts(n());
  counts.push_back(kLarge / 4);
  for (ncclDataType_t t : {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64}) {
    const std::size_t es = element_bytes(t);
    for (std::size_t sc : counts) {
      for (bool in_place : {false, true}) {
        const std::size_t total = sc * static_cast<std::size_t>(n());
        const auto mine = encode(t, sc, [&](std::size_t j) { return input_value(ncclSum, t, me(), j); });
        const auto want = encode(t, total, [&](std::size_t i) {
          return input_value(ncclSum, t, static_cast<int>(i / std::max<std::size_t>(sc, 1)),
                             i % std::max<std::size_t>(sc, 1));
        });
        DeviceBuffer send(sc * es), recv(total * es);
        // NCCL's in-place all-gather: sendbuff == recvbuff + rank * sendcount.
        char* in = in_place ? recv.bytes_at(static_cast<std::size_t>(me()) * sc * es) : static_cast<char*>(send.get());
        if (!mine.empty()) {
          EMU_CUDA_OK(cudaMemcpy(in, mine.data(), mine.size(), cudaMemcpyHostToDevice));
        }
        EMU_NCCL_OK(ncclAllGather(in, recv.get(), sc, t, comm_, *stream_));
        stream_->sync();
        EXPECT_SAME_BYTES(recv.download_all(), want, es,
                          std::string("all-gather ") + type_name(t) + " sendcount " + std::to_string(sc) +
                              (in_place ? " in place" : ""));
      }
    }
  }
}

// ---- broadcast and reduce ---------------------------------------------------------------------------------

TEST_F(EmuNccl, BroadcastFromEveryRoot) {
  for (int root = 0; root < n(); ++root) {
    for (ncclDataType_t t : {ncclUint8, ncclBfloat16, ncclInt32, ncclUint64}) {
      const std::size_t es = element_bytes(t);
      for (std::size_t count : small_counts(n())) {
        for (bool in_place : {false, true}) {
          const auto root_data = encode(t, count, [&](std::size_t i) { return input_value(ncclMax, t, root, i); });
          DeviceBuffer send(count * es), recv(count * es);
          std::vector<unsigned char> junk(count * es, 0xA5);  // what non-roots hold: must be overwritten
          recv.upload(junk.data(), junk.size());
          if (me() == root) (in_place ? recv : send).upload(root_data.data(), root_data.size());
          EMU_NCCL_OK(ncclBroadcast(in_place ? recv.get() : send.get(), recv.get(), count, t, root, comm_, *stream_));
          stream_->sync();
          EXPECT_SAME_BYTES(recv.download_all(), root_data, es,
                            std::string("broadcast root ") + std::to_string(root) + " " + type_name(t) + " count " +
                                std::to_string(count) + (in_place ? " in place" : ""));
        }
      }
    }
  }
  // One large broadcast.
  const auto big = encode(ncclFloat32, kLarge, [&](std::size_t i) { return input_value(ncclSum, ncclFloat32, 0, i); });
  DeviceBuffer buf(big.size());
  if (me() == n() - 1) buf.upload(big.data(), big.size());
  EMU_NCCL_OK(ncclBroadcast(buf.get(), buf.get(), kLarge, ncclFloat32, n() - 1, comm_, *stream_));
  stream_->sync();
  if (me() != n() - 1) {
    // Non-roots compare with the root's data, which they can compute.
    const auto want =
        encode(ncclFloat32, kLarge, [&](std::size_t i) { return input_value(ncclSum, ncclFloat32, 0, i); });
    EXPECT_SAME_BYTES(buf.download_all(), want, 4, "large broadcast");
  }
}

TEST_F(EmuNccl, ReduceToEveryRoot) {
  for (int root = 0; root < n(); ++root) {
    for (ncclDataType_t t : {ncclInt8, ncclUint32, ncclFloat16, ncclFloat64}) {
      const std::size_t es = element_bytes(t);
      for (ncclRedOp_t op : kAllOps) {
        for (std::size_t count : small_counts(n())) {
          for (bool in_place : {false, true}) {
            const auto input = encode(t, count, [&](std::size_t i) { return input_value(op, t, me(), i); });
            const auto want = encode(t, count, [&](std::size_t i) {
              return exact_reduce(op, t, n(), [&](int q) { return input_value(op, t, q, i); });
            });
            DeviceBuffer send(count * es), recv(count * es);
            const std::vector<unsigned char> sentinel(count * es, 0x5A);
            send.upload(input.data(), input.size());
            recv.upload(sentinel.data(), sentinel.size());
            // Off the root recvbuff may be NULL; the out-of-place variant passes a buffer that must stay untouched.
            void* out = in_place ? send.get() : recv.get();
            EMU_NCCL_OK(
                ncclReduce(send.get(), me() == root || !in_place ? out : nullptr, count, t, op, root, comm_, *stream_));
            stream_->sync();
            const std::string what = std::string("reduce root ") + std::to_string(root) + " " + type_name(t) + " " +
                                     op_label(op) + " count " + std::to_string(count) + (in_place ? " in place" : "");
            if (me() == root) {
              EXPECT_SAME_BYTES((in_place ? send : recv).download_all(), want, es, what);
            } else if (!in_place) {
              EXPECT_SAME_BYTES(recv.download_all(), sentinel, es, what + " (non-root recvbuff)");
            }
          }
        }
      }
    }
  }
}

// ncclReduce reduces exactly as ncclAllReduce does (same blocks, same order): same bits at the root.
TEST_F(EmuNccl, ReduceEqualsAllReduceBitwise) {
  constexpr std::size_t kCount = 10007;
  std::vector<unsigned char> input(kCount * 4);
  for (std::size_t i = 0; i < kCount; ++i) put_element(ncclFloat32, input.data(), i, arbitrary_value(me(), i));
  DeviceBuffer send(input.size()), all(input.size()), one(input.size());
  send.upload(input.data(), input.size());
  EMU_NCCL_OK(ncclAllReduce(send.get(), all.get(), kCount, ncclFloat32, ncclSum, comm_, *stream_));
  EMU_NCCL_OK(ncclReduce(send.get(), one.get(), kCount, ncclFloat32, ncclSum, 0, comm_, *stream_));
  stream_->sync();
  if (me() == 0) EXPECT_SAME_BYTES(one.download_all(), all.download_all(), 4, "reduce vs all-reduce");
}

// ---- point-to-point -------------------------------------------------------------------------------------

std::uint32_t pattern(int from, int to, std::size_t i) {
  return static_cast<std::uint32_t>(i * 2654435761u) ^ (static_cast<std::uint32_t>(from) << 24) ^
         (static_cast<std::uint32_t>(to) << 16);
}

// Both ring directions at once, 16 MiB per message (32 MiB sent and 32 MiB received per rank, at least
// 64 MiB in flight in total from np 2 on): only concurrent progress of the group's sends and receives
// avoids a deadlock at this size, hundreds of times what socket buffers hold.
TEST_F(EmuNccl, RingExchangeLargeMessagesInOneGroup) {
  constexpr std::size_t kWords = (16u << 20) / 4;
  const int right = (me() + 1) % n(), left = (me() + n() - 1) % n();
  std::vector<std::uint32_t> to_right(kWords), to_left(kWords);
  for (std::size_t i = 0; i < kWords; ++i) {
    to_right[i] = pattern(me(), right, i);
    to_left[i] = pattern(me(), left, i) ^ 0xFFFFFFFFu;
  }
  DeviceBuffer send_r(kWords * 4), send_l(kWords * 4), from_l(kWords * 4), from_r(kWords * 4);
  send_r.upload(to_right.data(), kWords * 4);
  send_l.upload(to_left.data(), kWords * 4);
  EMU_NCCL_OK(ncclGroupStart());
  EMU_NCCL_OK(ncclSend(send_r.get(), kWords, ncclUint32, right, comm_, *stream_));
  EMU_NCCL_OK(ncclSend(send_l.get(), kWords, ncclUint32, left, comm_, *stream_));
  EMU_NCCL_OK(ncclRecv(from_l.get(), kWords, ncclUint32, left, comm_, *stream_));
  EMU_NCCL_OK(ncclRecv(from_r.get(), kWords, ncclUint32, right, comm_, *stream_));
  EMU_NCCL_OK(ncclGroupEnd());
  stream_->sync();
  std::vector<std::uint32_t> got_l(kWords), got_r(kWords);
  from_l.download(got_l.data(), kWords * 4);
  from_r.download(got_r.data(), kWords * 4);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < kWords; ++i) {
    bad += got_l[i] != pattern(left, me(), i);
    bad += got_r[i] != (pattern(right, me(), i) ^ 0xFFFFFFFFu);
  }
  EXPECT_EQ(bad, 0u);
}

// Every rank sends a different-sized message to every rank, itself included, in one group.
TEST_F(EmuNccl, AllToAllInOneGroupIncludingSelf) {
  auto count = [](int from, int to) { return static_cast<std::size_t>(100000 + 1000 * from + 10 * to); };
  std::vector<std::unique_ptr<DeviceBuffer>> out, in;
  for (int q = 0; q < n(); ++q) {
    std::vector<std::uint32_t> data(count(me(), q));
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = pattern(me(), q, i);
    out.push_back(std::make_unique<DeviceBuffer>(data.size() * 4));
    out.back()->upload(data.data(), data.size() * 4);
    in.push_back(std::make_unique<DeviceBuffer>(count(q, me()) * 4));
  }
  EMU_NCCL_OK(ncclGroupStart());
  for (int q = 0; q < n(); ++q) {
    EMU_NCCL_OK(ncclRecv(in[q]->get(), count(q, me()), ncclUint32, q, comm_, *stream_));
    EMU_NCCL_OK(ncclSend(out[q]->get(), count(me(), q), ncclUint32, q, comm_, *stream_));
  }
  EMU_NCCL_OK(ncclGroupEnd());
  stream_->sync();
  for (int q = 0; q < n(); ++q) {
    std::vector<std::uint32_t> got(count(q, me()));
    in[q]->download(got.data(), got.size() * 4);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) bad += got[i] != pattern(q, me(), i);
    EXPECT_EQ(bad, 0u) << "from rank " << q;
  }
}

// The root receives everyone's block in one group; the others send with single, ungrouped calls
// (the `nccl` backend's gather): point-to-point matching does not depend on grouping.
TEST_F(EmuNccl, GatherFromGroupAgainstSingleSends) {
  constexpr std::size_t kCount = 300001;
  const int root = n() / 2;
  std::vector<std::uint32_t> mine(kCount);
  for (std::size_t i = 0; i < kCount; ++i) mine[i] = pattern(me(), root, i);
  DeviceBuffer send(kCount * 4), gathered(kCount * 4 * static_cast<std::size_t>(n()));
  send.upload(mine.data(), kCount * 4);
  if (me() != root) {
    EMU_NCCL_OK(ncclSend(send.get(), kCount, ncclUint32, root, comm_, *stream_));
  } else {
    EMU_NCCL_OK(ncclGroupStart());
    for (int q = 0; q < n(); ++q) {
      if (q != root) EMU_NCCL_OK(ncclRecv(gathered.bytes_at(q * kCount * 4), kCount, ncclUint32, q, comm_, *stream_));
    }
    EMU_NCCL_OK(ncclGroupEnd());
  }
  stream_->sync();
  if (me() == root) {
    std::vector<std::uint32_t> got(kCount * static_cast<std::size_t>(n()));
    gathered.download(got.data(), got.size() * 4);
    std::size_t bad = 0;
    for (int q = 0; q < n(); ++q) {
      if (q == root) continue;
      for (std::size_t i = 0; i < kCount; ++i)
        bad += got[static_cast<std::size_t>(q) * kCount + i] != pattern(q, root, i);
    }
    EXPECT_EQ(bad, 0u);
  }
}

// ---- stream semantics ----------------------------------------------------------------------------------

// The call returns while its stream is still busy with earlier work, and it reads its input only when
// the stream reaches it (after the asynchronous upload queued before it).
TEST_F(EmuNccl, ReturnsAtOnceAndRunsInStreamOrder) {
  constexpr std::size_t kCount = 1000;
  std::vector<std::int32_t> input(kCount, me() + 1);
  DeviceBuffer buf(kCount * 4);
  Stream s;
  stream_sleep(s, 300);
  EMU_CUDA_OK(cudaMemcpyAsync(buf.get(), input.data(), kCount * 4, cudaMemcpyHostToDevice, s));
  const auto t0 = std::chrono::steady_clock::now();
  EMU_NCCL_OK(ncclAllReduce(buf.get(), buf.get(), kCount, ncclInt32, ncclSum, comm_, s));
  EXPECT_LT(seconds_since(t0), 0.15) << "ncclAllReduce waited for its stream";
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  s.sync();
  std::vector<std::int32_t> got(kCount);
  buf.download(got.data(), kCount * 4);
  const std::int32_t want = n() * (n() + 1) / 2;
  EXPECT_EQ(std::count(got.begin(), got.end(), want), static_cast<long>(kCount));
}

// Rank 0 holds back stream A; the second collective, on stream B, must still wait for the first
// (issue order). Issued in the other order on rank 0, the two collectives would not match.
TEST_F(EmuNccl, IssueOrderHoldsAcrossStreams) {
  Stream a, b;
  DeviceBuffer x(10 * 4), y(20 * 4);
  std::vector<std::int32_t> ones(20, 1);
  x.upload(ones.data(), 10 * 4);
  y.upload(ones.data(), 20 * 4);
  if (me() == 0) stream_sleep(a, 300);
  EMU_NCCL_OK(ncclAllReduce(x.get(), x.get(), 10, ncclInt32, ncclSum, comm_, a));
  EMU_NCCL_OK(ncclAllReduce(y.get(), y.get(), 20, ncclInt32, ncclSum, comm_, b));
  a.sync();
  b.sync();
  std::vector<std::int32_t> gx(10), gy(20);
  x.download(gx.data(), 40);
  y.download(gy.data(), 80);
  EXPECT_EQ(std::count(gx.begin(), gx.end(), n()), 10);
  EXPECT_EQ(std::count(gy.begin(), gy.end(), n()), 20);
}

// A group whose calls use two streams: the exchange waits for both (B is held back on rank 0), and work
// queued on either stream after ncclGroupEnd sees its result.
TEST_F(EmuNccl, GroupOverTwoStreamsJoinsThem) {
  constexpr std::size_t kCount = 4096;
  Stream a, b;
  const int right = (me() + 1) % n(), left = (me() + n() - 1) % n();
  std::vector<std::uint32_t> data(kCount);
  for (std::size_t i = 0; i < kCount; ++i) data[i] = pattern(me(), right, i);
  DeviceBuffer send(kCount * 4), recv(kCount * 4), copy(kCount * 4);
  if (me() == 0) stream_sleep(b, 300);
  EMU_CUDA_OK(cudaMemcpyAsync(send.get(), data.data(), kCount * 4, cudaMemcpyHostToDevice, b));
  EMU_NCCL_OK(ncclGroupStart());
  EMU_NCCL_OK(ncclSend(send.get(), kCount, ncclUint32, right, comm_, a));
  EMU_NCCL_OK(ncclRecv(recv.get(), kCount, ncclUint32, left, comm_, b));
  EMU_NCCL_OK(ncclGroupEnd());
  EMU_CUDA_OK(cudaMemcpyAsync(copy.get(), recv.get(), kCount * 4, cudaMemcpyDeviceToDevice, a));
  a.sync();
  b.sync();
  std::vector<std::uint32_t> got(kCount);
  copy.download(got.data(), kCount * 4);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < kCount; ++i) bad += got[i] != pattern(left, me(), i);
  EXPECT_EQ(bad, 0u);
}

// ---- CUDA graphs ------------------------------------------------------------------------------------

// Captured, the all-reduce runs at every launch of the graph, as a new operation of the communicator
// taken in issue order (an eager all-reduce issued after the launch runs after it on every rank), and
// on what the buffer holds at that launch.
TEST_F(EmuNccl, CapturedCollectiveRunsAtEveryGraphLaunch) {
  constexpr std::size_t kCount = 1001;
  Stream s;
  DeviceBuffer buf(kCount * 4), out(kCount * 4), eager(4);
  EMU_CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  EMU_NCCL_OK(ncclAllReduce(buf.get(), buf.get(), kCount, ncclInt32, ncclSum, comm_, s));
  EMU_CUDA_OK(cudaMemcpyAsync(out.get(), buf.get(), kCount * 4, cudaMemcpyDeviceToDevice, s));
  cudaGraph_t graph = nullptr;
  EMU_CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  EMU_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  EMU_CUDA_OK(cudaGraphDestroy(graph));
  for (int launch = 0; launch < 3; ++launch) {
    const std::vector<std::int32_t> mine(kCount, me() + 1 + launch);
    const std::int32_t one = 1;
    buf.upload(mine.data(), kCount * 4);
    eager.upload(&one, 4);
    EMU_CUDA_OK(cudaGraphLaunch(exec, s));
    EMU_NCCL_OK(ncclAllReduce(eager.get(), eager.get(), 1, ncclInt32, ncclSum, comm_, s));
    s.sync();
    std::vector<std::int32_t> got(kCount);
    std::int32_t eager_got = 0;
    out.download(got.data(), kCount * 4);
    eager.download(&eager_got, 4);
    const std::int32_t want = n() * (n() + 1) / 2 + n() * launch;
    EXPECT_EQ(std::count(got.begin(), got.end(), want), static_cast<long>(kCount)) << "launch " << launch;
    EXPECT_EQ(eager_got, n());
  }
  EMU_CUDA_OK(cudaGraphExecDestroy(exec));
}

// A ring step (send right on stream A, receive left on stream B, one group) captured with B forked from
// and joined back to A: one node on both streams, replayed twice on new data.
TEST_F(EmuNccl, GroupOverTwoCapturedStreamsIsOneNode) {
  constexpr std::size_t kCount = 4096;
  Stream a, b;
  cudaEvent_t fork = nullptr, join = nullptr;
  EMU_CUDA_OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  EMU_CUDA_OK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  const int right = (me() + 1) % n(), left = (me() + n() - 1) % n();
  DeviceBuffer send(kCount * 4), recv(kCount * 4), copy(kCount * 4);
  EMU_CUDA_OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
  EMU_CUDA_OK(cudaEventRecord(fork, a));
  EMU_CUDA_OK(cudaStreamWaitEvent(b, fork, 0));
  EMU_NCCL_OK(ncclGroupStart());
  EMU_NCCL_OK(ncclSend(send.get(), kCount, ncclUint32, right, comm_, a));
  EMU_NCCL_OK(ncclRecv(recv.get(), kCount, ncclUint32, left, comm_, b));
  EMU_NCCL_OK(ncclGroupEnd());
  EMU_CUDA_OK(cudaEventRecord(join, b));
  EMU_CUDA_OK(cudaStreamWaitEvent(a, join, 0));
  EMU_CUDA_OK(cudaMemcpyAsync(copy.get(), recv.get(), kCount * 4, cudaMemcpyDeviceToDevice, a));
  cudaGraph_t graph = nullptr;
  EMU_CUDA_OK(cudaStreamEndCapture(a, &graph));
  std::size_t nodes = 0;
  EMU_CUDA_OK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_EQ(nodes, 2u);
  cudaGraphExec_t exec = nullptr;
  EMU_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  EMU_CUDA_OK(cudaGraphDestroy(graph));
  for (std::size_t launch = 0; launch < 2; ++launch) {
    std::vector<std::uint32_t> data(kCount);
    for (std::size_t i = 0; i < kCount; ++i) data[i] = pattern(me(), right, i + launch);
    send.upload(data.data(), kCount * 4);
    EMU_CUDA_OK(cudaGraphLaunch(exec, a));
    a.sync();
    std::vector<std::uint32_t> got(kCount);
    copy.download(got.data(), kCount * 4);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < kCount; ++i) bad += got[i] != pattern(left, me(), i + launch);
    EXPECT_EQ(bad, 0u) << "launch " << launch;
  }
  EMU_CUDA_OK(cudaGraphExecDestroy(exec));
  EMU_CUDA_OK(cudaEventDestroy(fork));
  EMU_CUDA_OK(cudaEventDestroy(join));
}

// One operation cannot be half in a capture: refused at ncclGroupEnd on every rank alike, nothing
// launched (the communicator stays in step), and the capture is invalidated.
TEST_F(EmuNccl, GroupOverACapturingAndAPlainStreamIsRefused) {
  constexpr std::size_t kCount = 64;
  Stream a, b;
  const int right = (me() + 1) % n(), left = (me() + n() - 1) % n();
  DeviceBuffer send(kCount * 4), recv(kCount * 4), sum(4);
  EMU_CUDA_OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
  EMU_NCCL_OK(ncclGroupStart());
  EMU_NCCL_OK(ncclSend(send.get(), kCount, ncclUint32, right, comm_, a));
  EMU_NCCL_OK(ncclRecv(recv.get(), kCount, ncclUint32, left, comm_, b));
  EXPECT_EQ(ncclGroupEnd(), ncclUnhandledCudaError);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(a, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);
  (void)cudaGetLastError();
  const std::int32_t one = 1;
  sum.upload(&one, 4);
  EMU_NCCL_OK(ncclAllReduce(sum.get(), sum.get(), 1, ncclInt32, ncclSum, comm_, b));
  b.sync();
  std::int32_t got = 0;
  sum.download(&got, 4);
  EXPECT_EQ(got, n());
}

TEST_F(EmuNccl, QueriesAndVersion) {
  int v = 0, count = 0, rank = -1, device = -1;
  EMU_NCCL_OK(ncclGetVersion(&v));
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  EMU_NCCL_OK(ncclCommCount(comm_, &count));
  EMU_NCCL_OK(ncclCommUserRank(comm_, &rank));
  EMU_NCCL_OK(ncclCommCuDevice(comm_, &device));
  EXPECT_EQ(count, n());
  EXPECT_EQ(rank, me());
  EXPECT_EQ(device, node_local_rank());
}

}  // namespace
}  // namespace emu_test
