// test_emu_nccl_unit.cpp — the emulated NCCL without MPI: its pure parts (fp16/bf16 conversions, the
// ordered reduction, wire headers, unique ids, interface selection) and whole communicators whose
// ranks are threads of this process (each thread on its own device): argument checks, groups,
// duplicate-GPU detection, bootstrap timeouts, desynchronisation, abort, destroy, leaks.
#include <gtest/gtest.h>
#include <nccl.h>

#include <arpa/inet.h>
#include <sys/resource.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "emu_nccl_test_util.hpp"
#include "half_float.hpp"
#include "net_interface.hpp"
#include "reduce.hpp"
#include "unique_id.hpp"
#include "wire.hpp"

namespace emu_test {
namespace {

namespace impl = cuda_emu::nccl;

// ---- conversions -------------------------------------------------------------------------------------

TEST(HalfFloat, EveryHalfConvertsExactlyAndBack) {
  for (std::uint32_t u = 0; u <= 0xFFFF; ++u) {
    const auto h = static_cast<std::uint16_t>(u);
    const float f = impl::half_to_float(h);
    const float ref = ref_half_to_float(h);
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << u;
      EXPECT_TRUE(std::isnan(impl::half_to_float(impl::float_to_half(f)))) << std::hex << u;
      continue;
    }
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f), std::bit_cast<std::uint32_t>(ref)) << std::hex << u;
    ASSERT_EQ(impl::float_to_half(f), h) << std::hex << u;
  }
}

TEST(HalfFloat, FloatToHalfRoundsLikeTheCompiler) {
  std::mt19937_64 rng(12345);
  // Random bit patterns over the whole float range, plus the halfway points between adjacent halves.
  for (int i = 0; i < 2000000; ++i) {
    const auto bits = static_cast<std::uint32_t>(rng());
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(impl::float_to_half(f), ref_half(f)) << std::hex << bits;
  }
  for (std::uint32_t u = 0; u < 0x7C00; ++u) {
    const double mid = (static_cast<double>(ref_half_to_float(static_cast<std::uint16_t>(u))) +
                        ref_half_to_float(static_cast<std::uint16_t>(u + 1))) /
                       2;
    const auto f = static_cast<float>(mid);  // exact: a half's halfway point fits in a float
    ASSERT_EQ(impl::float_to_half(f), ref_half(f)) << std::hex << u;
    ASSERT_EQ(impl::float_to_half(-f), ref_half(-f)) << std::hex << u;
  }
  EXPECT_EQ(impl::float_to_half(65520.0f), 0x7C00);  // halfway to the next binade: infinity
  EXPECT_EQ(impl::float_to_half(65519.996f), 0x7BFF);
  EXPECT_EQ(impl::float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal: to even
  EXPECT_EQ(impl::float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
}

TEST(Bfloat16, RoundsToNearestEven) {
  for (std::uint32_t u = 0; u <= 0xFFFF; ++u) {
    const float f = impl::bf16_to_float(static_cast<std::uint16_t>(u));
    if (!std::isnan(f)) {
      ASSERT_EQ(impl::float_to_bf16(f), u) << std::hex << u;
    }
  }
  std::mt19937_64 rng(6789);
  for (int i = 0; i < 2000000; ++i) {
    const auto bits = static_cast<std::uint32_t>(rng());
    const float f = std::bit_cast<float>(bits);
    if (!std::isfinite(f) || std::fabs(f) > 3.3e38f) continue;  // the reference needs finite neighbours
    ASSERT_EQ(impl::float_to_bf16(f), ref_bf16(f)) << std::hex << bits;
  }
  EXPECT_EQ(impl::float_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(impl::float_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_TRUE(std::isnan(impl::bf16_to_float(impl::float_to_bf16(std::nanf("")))));
}

// ---- the ordered reduction -----------------------------------------------------------------------------

template <typename T>
std::vector<T> reduce_values(ncclDataType_t t, ncclRedOp_t op, const std::vector<std::vector<T>>& inputs) {
  std::vector<const void*> ptrs;
  for (const auto& v : inputs) ptrs.push_back(v.data());
  std::vector<T> out(inputs.front().size());
  impl::reduce_in_order(out.data(), ptrs.data(), static_cast<int>(ptrs.size()), out.size(), t, op);
  return out;
}

TEST(Reduce, IntegersWrapAndAverageTruncates) {
  EXPECT_EQ(reduce_values<std::int8_t>(ncclInt8, ncclSum, {{100}, {100}})[0], -56);
  EXPECT_EQ(reduce_values<std::uint8_t>(ncclUint8, ncclProd, {{16}, {17}})[0], 16);  // 272 mod 256
  EXPECT_EQ(reduce_values<std::int32_t>(ncclInt32, ncclAvg, {{-4}, {-3}})[0], -3);   // -7 / 2
  EXPECT_EQ(reduce_values<std::int64_t>(ncclInt64, ncclSum, {{INT64_MAX}, {1}})[0], INT64_MIN);
  EXPECT_EQ(reduce_values<std::uint64_t>(ncclUint64, ncclMax, {{3}, {UINT64_MAX}, {7}})[0], UINT64_MAX);
  EXPECT_EQ(reduce_values<std::int8_t>(ncclInt8, ncclMin, {{3}, {-128}, {7}})[0], -128);
}

TEST(Reduce, FloatsFollowNcclMinMaxAndRankOrder) {
  const float nan = std::nanf("");
  EXPECT_EQ(reduce_values<float>(ncclFloat32, ncclMax, {{nan}, {1.0f}})[0], 1.0f);  // fmaxf: the number wins
  EXPECT_EQ(reduce_values<float>(ncclFloat32, ncclMin, {{2.0f}, {nan}})[0], 2.0f);
  // Left to right: (1e8 + 1) + -1e8 = 0 in float, not 1.
  EXPECT_EQ(reduce_values<float>(ncclFloat32, ncclSum, {{1e8f}, {1.0f}, {-1e8f}})[0], 0.0f);
  EXPECT_EQ(reduce_values<double>(ncclFloat64, ncclAvg, {{1.0}, {2.0}, {2.0}})[0], 5.0 / 3.0);
}

// fp16 / bf16 accumulate in float and round once: 2048 + 1 + 1 is 2050 (rounding each step would stop
// at 2048, since 2049 is a tie that rounds to even).
TEST(Reduce, HalfTypesAccumulateInFloatAndRoundOnce) {
  const std::uint16_t h2048 = ref_half(2048.0f), h1 = ref_half(1.0f);
  EXPECT_EQ(reduce_values<std::uint16_t>(ncclFloat16, ncclSum, {{h2048}, {h1}, {h1}})[0], ref_half(2050.0f));
  const std::uint16_t b256 = ref_bf16(256.0f), b1 = ref_bf16(1.0f);
  EXPECT_EQ(reduce_values<std::uint16_t>(ncclBfloat16, ncclSum, {{b256}, {b1}, {b1}})[0], ref_bf16(258.0f));
  // Avg: float sum / n, one rounding.
  EXPECT_EQ(reduce_values<std::uint16_t>(ncclFloat16, ncclAvg, {{h1}, {h1}, {ref_half(2.0f)}})[0],
            ref_half(4.0f / 3.0f));
}

TEST(Reduce, OutputMayAliasAnInputAtTheSameIndices) {
  std::vector<std::int32_t> a(5000), b(5000);
  for (int i = 0; i < 5000; ++i) {
    a[static_cast<std::size_t>(i)] = i;
    b[static_cast<std::size_t>(i)] = 2 * i;
  }
  const void* inputs[] = {b.data(), a.data()};
  impl::reduce_in_order(a.data(), inputs, 2, a.size(), ncclInt32, ncclSum);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(a[static_cast<std::size_t>(i)], 3 * i);
}

// ---- wire, unique id, interfaces ---------------------------------------------------------------------

TEST(Wire, MismatchNamesBothRanksAndOperations) {
  impl::Header mine;
  mine.kind = static_cast<std::uint8_t>(impl::OpKind::AllReduce);
  mine.step = 1;
  mine.dtype = ncclFloat32;
  mine.op = ncclSum;
  mine.from = 0;
  mine.seq = 3;
  mine.count = 999;
  mine.payload_bytes = 1996;
  impl::Header theirs = mine;
  EXPECT_EQ(impl::mismatch(mine, theirs, 1, 0), "");
  theirs.count = 1000;
  theirs.payload_bytes = 2000;
  const std::string why = impl::mismatch(mine, theirs, 1, 0);
  EXPECT_NE(why.find("rank 1 is in all-reduce #3 (count 999, float32, sum)"), std::string::npos) << why;
  EXPECT_NE(why.find("rank 0 sent all-reduce #3 (count 1000, float32, sum)"), std::string::npos) << why;
  theirs = mine;
  theirs.from = 2;  // a message on the wrong connection
  EXPECT_NE(impl::mismatch(mine, theirs, 1, 0), "");
}

TEST(UniqueId, RoundTripsAndRejectsForeignIds) {
  impl::UniqueIdContents in{0x1234567890abcdefULL, impl::Endpoint{htonl(0xC0000202u), 40123}};
  ncclUniqueId id;
  impl::encode_unique_id(in, id);
  impl::UniqueIdContents out;
  ASSERT_TRUE(impl::decode_unique_id(id, out));
  EXPECT_EQ(out.nonce, in.nonce);
  EXPECT_EQ(out.root.ip, in.root.ip);
  EXPECT_EQ(out.root.port, in.root.port);
  ncclUniqueId bad = id;
  bad.internal[0] ^= 1;
  EXPECT_FALSE(impl::decode_unique_id(bad, out));
  bad = id;
  bad.internal[100] = 7;
  EXPECT_FALSE(impl::decode_unique_id(bad, out));
  std::memset(&bad, 0, sizeof bad);
  EXPECT_FALSE(impl::decode_unique_id(bad, out));
}

TEST(Interfaces, FilterSyntaxAsNccl) {
  const impl::IfnameFilter prefix = impl::parse_ifname_filter("eth,ib");
  EXPECT_TRUE(impl::ifname_matches(prefix, "eth0"));
  EXPECT_TRUE(impl::ifname_matches(prefix, "ib1"));
  EXPECT_FALSE(impl::ifname_matches(prefix, "lo"));
  const impl::IfnameFilter exact = impl::parse_ifname_filter("=eth0");
  EXPECT_TRUE(impl::ifname_matches(exact, "eth0"));
  EXPECT_FALSE(impl::ifname_matches(exact, "eth01"));
  const impl::IfnameFilter exclude = impl::parse_ifname_filter("^docker,lo");
  EXPECT_FALSE(impl::ifname_matches(exclude, "docker0"));
  EXPECT_FALSE(impl::ifname_matches(exclude, "lo"));
  EXPECT_TRUE(impl::ifname_matches(exclude, "eth0"));
  const impl::IfnameFilter exclude_exact = impl::parse_ifname_filter("^=eth0");
  EXPECT_FALSE(impl::ifname_matches(exclude_exact, "eth0"));
  EXPECT_TRUE(impl::ifname_matches(exclude_exact, "eth00"));
}

TEST(Interfaces, DefaultSkipsLoopbackAndDownInterfaces) {
  const std::vector<impl::InterfaceAddress> list = {{"lo", htonl(0x7F000001u), true, true},
                                                    {"eth0", htonl(0x0A000001u), false, false},
                                                    {"veth3", htonl(0x0A000002u), true, false}};
  EXPECT_EQ(impl::choose_interface(list, nullptr), 2u);
  const impl::IfnameFilter lo = impl::parse_ifname_filter("lo");
  EXPECT_EQ(impl::choose_interface(list, &lo), 0u);
  const impl::IfnameFilter eth = impl::parse_ifname_filter("eth");
  EXPECT_FALSE(impl::choose_interface(list, &eth).has_value());          // eth0 is down
  EXPECT_FALSE(impl::choose_interface({list[0]}, nullptr).has_value());  // caller falls back to 127.0.0.1
}

// ---- communicators of threads ------------------------------------------------------------------------

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

// ncclCommInitRank for ranks 0..n-1 on threads, rank r on device devices[r].
std::vector<ncclResult_t> init_threads(const ncclUniqueId& id, const std::vector<int>& devices,
                                       std::vector<ncclComm_t>& comms) {
  const int n = static_cast<int>(devices.size());
  comms.assign(devices.size(), nullptr);
  std::vector<ncclResult_t> rc(devices.size(), ncclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      (void)cudaSetDevice(devices[static_cast<std::size_t>(r)]);
      rc[static_cast<std::size_t>(r)] = ncclCommInitRank(&comms[static_cast<std::size_t>(r)], n, id, r);
    });
  }
  for (std::thread& t : threads) t.join();
  return rc;
}

std::vector<ncclComm_t> make_comms(const std::vector<int>& devices) {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms;
  for (ncclResult_t rc : init_threads(id, devices, comms)) EXPECT_EQ(rc, ncclSuccess) << ncclGetLastError(nullptr);
  return comms;
}

ncclResult_t async_error(ncclComm_t comm) {
  ncclResult_t e = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &e), ncclSuccess);
  return e;
}

TEST(InProcess, ThreeRanksDrivenByOneThreadInAGroup) {
  auto comms = make_comms({0, 1, 2});
  ASSERT_EQ(comms.size(), 3u);
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<std::unique_ptr<Stream>> streams;
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);  // buffers are device memory of each rank's device
    bufs.push_back(std::make_unique<DeviceBuffer>(1001 * sizeof(double)));
    streams.push_back(std::make_unique<Stream>());
    std::vector<double> v(1001, r + 0.5);
    bufs.back()->upload(v.data(), v.size() * sizeof(double));
  }
  // One thread drives all three ranks, as NCCL's single-process multi-GPU use does: the group launches
  // one operation per communicator, each on its own stream, so they run concurrently.
  EMU_NCCL_OK(ncclGroupStart());
  for (int r = 0; r < 3; ++r) {
    EMU_NCCL_OK(ncclAllReduce(bufs[r]->get(), bufs[r]->get(), 1001, ncclFloat64, ncclSum, comms[r], *streams[r]));
  }
  EMU_NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < 3; ++r) {
    streams[r]->sync();
    std::vector<double> got(1001);
    bufs[r]->download(got.data(), got.size() * sizeof(double));
    EXPECT_EQ(std::count(got.begin(), got.end(), 4.5), 1001);
    EXPECT_EQ(async_error(comms[r]), ncclSuccess);
    EMU_NCCL_OK(ncclCommDestroy(comms[r]));
  }
  (void)cudaSetDevice(0);
}

TEST(InProcess, DuplicateGpuIsRefusedOnEveryRank) {
  ncclUniqueId id;
  EMU_NCCL_OK(ncclGetUniqueId(&id));
  std::vector<ncclComm_t> comms;
  const auto rc = init_threads(id, {3, 3}, comms);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(rc[static_cast<std::size_t>(r)], ncclInvalidUsage);
    EXPECT_EQ(comms[static_cast<std::size_t>(r)], nullptr);
  }
  const std::string last = ncclGetLastError(nullptr);
  EXPECT_NE(last.find("Duplicate GPU detected: rank 0 and rank 1 both on CUDA device 3"), std::string::npos) << last;
}

TEST(InProcess, BootstrapTimeoutNamesTheMissingRank) {
  const ScopedEnv env("NCCL_EMU_BOOTSTRAP_TIMEOUT_S", "1");
  ncclUniqueId id;
  EMU_NCCL_OK(ncclGetUniqueId(&id));
  ncclComm_t comm = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclSystemError);
  const double took = seconds_since(t0);
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 8.0);
  EXPECT_EQ(comm, nullptr);
  const std::string last = ncclGetLastError(nullptr);
  EXPECT_NE(last.find("missing rank(s): 1"), std::string::npos) << last;
}

TEST(InProcess, RootThatGaveUpIsAnErrorNotAHang) {
  const ScopedEnv env("NCCL_EMU_BOOTSTRAP_TIMEOUT_S", "1");
  ncclUniqueId id;
  EMU_NCCL_OK(ncclGetUniqueId(&id));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // nobody came: the root has closed
  ncclComm_t comm = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSystemError);
  EXPECT_LT(seconds_since(t0), 8.0);
  const std::string last = ncclGetLastError(nullptr);
  EXPECT_NE(last.find("connecting to the root"), std::string::npos) << last;
}

TEST(InProcess, BadInitArguments) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclInvalidArgument);  // not one of our ids
  EMU_NCCL_OK(ncclGetUniqueId(&id));
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(nullptr, 1, id, 0), ncclInvalidArgument);
  EMU_NCCL_OK(ncclGroupStart());
  EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclInvalidUsage);
  EMU_NCCL_OK(ncclGroupEnd());
  EMU_NCCL_OK(ncclCommInitRank(&comm, 1, id, 0));  // the id is still good
  EMU_NCCL_OK(ncclCommDestroy(comm));
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(nullptr), ncclSuccess);
  int v = 0;
  EMU_NCCL_OK(ncclGetVersion(&v));
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_NE(std::string(ncclGetErrorString(ncclRemoteError)), "");
}

TEST(InProcess, CallsWithBadArgumentsAreRefusedAndTheCommStaysUsable) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  auto comms = make_comms({0});
  ncclComm_t comm = comms[0];
  Stream s;
  DeviceBuffer dev(64 * 4);
  std::vector<float> host(64);
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 64 * 4), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  DeviceBuffer other_device(64 * 4);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);

  EXPECT_EQ(ncclAllReduce(host.data(), dev.get(), 64, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("not device memory"), std::string::npos);
  EXPECT_EQ(ncclAllReduce(dev.get(), pinned, 64, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(dev.get(), other_device.get(), 64, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(dev.get(), dev.get(), 65, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);  // too small
  EXPECT_EQ(ncclAllReduce(dev.bytes_at(4), dev.get(), 64, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(dev.get(), dev.get(), 64, ncclFloat8e4m3, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(dev.get(), dev.get(), 64, ncclNumTypes, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(dev.get(), dev.get(), 64, ncclFloat32, ncclNumOps, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(dev.get(), dev.get(), 64, ncclFloat32, ncclSum, nullptr, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(nullptr, dev.get(), 64, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(dev.get(), dev.get(), SIZE_MAX / 2, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclBroadcast(dev.get(), dev.get(), 64, ncclFloat32, 1, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclReduce(dev.get(), dev.get(), 64, ncclFloat32, ncclSum, -1, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclSend(dev.get(), 64, ncclFloat32, 1, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclRecv(dev.get(), 64, ncclFloat32, -1, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclReduceScatter(dev.get(), dev.get(), 65, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_EQ(ncclAllGather(dev.get(), dev.get(), 65, ncclFloat32, comm, s), ncclInvalidArgument);
  // Count 0 needs no buffers at all.
  EMU_NCCL_OK(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm, s));
  // A send to self needs its receive in the same group.
  EXPECT_EQ(ncclSend(dev.get(), 64, ncclFloat32, 0, comm, s), ncclInvalidUsage);
  EMU_NCCL_OK(ncclGroupStart());
  EMU_NCCL_OK(ncclSend(dev.get(), 32, ncclFloat32, 0, comm, s));
  EMU_NCCL_OK(ncclRecv(dev.bytes_at(128), 32, ncclFloat32, 0, comm, s));
  EMU_NCCL_OK(ncclGroupEnd());
  EMU_NCCL_OK(ncclGroupStart());
  EMU_NCCL_OK(ncclSend(dev.get(), 32, ncclFloat32, 0, comm, s));
  EMU_NCCL_OK(ncclRecv(dev.bytes_at(128), 31, ncclFloat32, 0, comm, s));
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);  // counts differ
  // A failed call inside a group: ncclGroupEnd launches nothing and reports it (nested groups too).
  std::vector<float> ones(64, 1.0f);
  dev.upload(ones.data(), 64 * 4);
  EMU_NCCL_OK(ncclGroupStart());
  EMU_NCCL_OK(ncclGroupStart());
  EMU_NCCL_OK(ncclAllReduce(dev.get(), dev.get(), 64, ncclFloat32, ncclProd, comm, s));
  EXPECT_EQ(ncclAllReduce(host.data(), dev.get(), 64, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EMU_NCCL_OK(ncclGroupEnd());
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  // Still usable: a real all-reduce (one rank: a copy) and no asynchronous error.
  DeviceBuffer out(64 * 4);
  EMU_NCCL_OK(ncclAllReduce(dev.get(), out.get(), 64, ncclFloat32, ncclSum, comm, s));
  s.sync();
  std::vector<float> got(64);
  out.download(got.data(), 64 * 4);
  EXPECT_EQ(got, ones);
  EXPECT_EQ(async_error(comm), ncclSuccess);
  EMU_NCCL_OK(ncclCommDestroy(comm));
  (void)cudaFreeHost(pinned);
}

// Ranks 0 and 1 disagree on the count: both get an asynchronous error naming both sides; nothing
// beyond the agreed sizes is written. The failed collective holds its stream (NCCL's kernels keep
// waiting on a GPU) until the communicator is aborted.
TEST(InProcess, MismatchedCountsFailOnBothRanks) {
  auto comms = make_comms({0, 1});
  std::vector<std::thread> ranks;
  std::vector<std::string> messages(2);
  std::vector<ncclResult_t> errors(2, ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      (void)cudaSetDevice(r);
      const std::size_t count = r == 0 ? 1000 : 999;
      DeviceBuffer buf(1000 * 4);
      Stream s;
      EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), count, ncclInt32, ncclSum, comms[r], s), ncclSuccess);
      EXPECT_TRUE(eventually([&] { return async_error(comms[r]) != ncclSuccess; }, 20.0));
      errors[r] = async_error(comms[r]);
      messages[r] = ncclGetLastError(comms[r]);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "rank " << r << ": the failed collective completed";
      // A failed communicator refuses new work with its error.
      DeviceBuffer b(4);
      EXPECT_EQ(ncclAllReduce(b.get(), b.get(), 1, ncclInt32, ncclSum, comms[r], nullptr), errors[r]);
      EMU_NCCL_OK(ncclCommAbort(comms[r]));
      EXPECT_TRUE(eventually([&] { return cudaStreamQuery(s) == cudaSuccess; }, 2.0)) << "rank " << r;
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(errors[r] == ncclInvalidUsage || errors[r] == ncclRemoteError) << ncclGetErrorString(errors[r]);
    EXPECT_NE(messages[r].find("count 1000"), std::string::npos) << messages[r];
    EXPECT_NE(messages[r].find("count 999"), std::string::npos) << messages[r];
  }
}

// Rank 1 never joins the all-reduce: rank 0's stream stays blocked (like a kernel waiting for a peer)
// until ncclCommAbort, from another thread, ends it promptly.
TEST(InProcess, AbortUnblocksACollectiveWaitingForAnAbsentPeer) {
  auto comms = make_comms({0, 1});
  DeviceBuffer buf(1 << 20);
  Stream s;
  EMU_NCCL_OK(ncclAllReduce(buf.get(), buf.get(), (1 << 20) / 4, ncclFloat32, ncclSum, comms[0], s));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(async_error(comms[0]), ncclSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  EMU_NCCL_OK(ncclCommAbort(comms[0]));
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_TRUE(eventually([&] { return cudaStreamQuery(s) == cudaSuccess; }, 2.0));
  EMU_NCCL_OK(ncclCommDestroy(comms[1]));
}

// NCCL_EMU_VERSION: ncclGetVersion reports it; an NCCL before 2.9.6 refuses a call on a capturing
// stream (its collectives cannot be captured) before recording or numbering anything, so the
// communicator stays usable; 2.9.6 records it; a malformed value is an error naming the variable.
TEST(InProcess, AnNcclBefore296RefusesCapturedCalls) {
  auto comms = make_comms({0});
  DeviceBuffer buf(64);
  Stream s;
  for (const char* version : {"20905", "20906"}) {
    const ScopedEnv env("NCCL_EMU_VERSION", version);
    int v = 0;
    EMU_NCCL_OK(ncclGetVersion(&v));
    EXPECT_EQ(v, std::atoi(version));
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    const ncclResult_t captured = ncclAllReduce(buf.get(), buf.get(), 16, ncclFloat32, ncclSum, comms[0], s);
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    std::size_t nodes = 0;
    EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
    EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    if (std::string(version) == "20905") {
      EXPECT_EQ(captured, ncclInvalidUsage);
      EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("cannot be captured"), std::string::npos);
      EXPECT_EQ(nodes, 0u);
    } else {
      EXPECT_EQ(captured, ncclSuccess);
      EXPECT_EQ(nodes, 1u);
    }
    EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), 16, ncclFloat32, ncclSum, comms[0], s), ncclSuccess)
        << "still usable";
    s.sync();
  }
  {
    const ScopedEnv env("NCCL_EMU_VERSION", "2.9.5");
    int v = 0;
    EXPECT_EQ(ncclGetVersion(&v), ncclInvalidUsage);
    EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("NCCL_EMU_VERSION"), std::string::npos);
  }
  EMU_NCCL_OK(ncclCommDestroy(comms[0]));
}

// ncclCommDestroy waits for the communicator's queued work.
TEST(InProcess, DestroyWaitsForPendingOperations) {
  auto comms = make_comms({0, 1});
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<std::unique_ptr<Stream>> streams;
  for (int r = 0; r < 2; ++r) {
    (void)cudaSetDevice(r);
    bufs.push_back(std::make_unique<DeviceBuffer>(4));
    streams.push_back(std::make_unique<Stream>());
    const std::int32_t v = r + 1;
    bufs[r]->upload(&v, 4);
  }
  (void)cudaSetDevice(0);
  stream_sleep(*streams[0], 300);
  for (int r = 0; r < 2; ++r)
    EMU_NCCL_OK(ncclAllReduce(bufs[r]->get(), bufs[r]->get(), 1, ncclInt32, ncclSum, comms[r], *streams[r]));
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 2; ++r) EMU_NCCL_OK(ncclCommDestroy(comms[r]));
  EXPECT_GE(seconds_since(t0), 0.25);
  for (int r = 0; r < 2; ++r) {
    streams[r]->sync();
    std::int32_t got = 0;
    bufs[r]->download(&got, 4);
    EXPECT_EQ(got, 3);
  }
}

// 64 ranks (the largest size the emulator promises): bootstrap, a full mesh of 64 x 63 connections in
// this one process, one all-reduce, teardown.
TEST(InProcess, SixtyFourRanks) {
  constexpr int kRanks = 64;
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < kRanks) GTEST_SKIP() << "needs " << kRanks << " devices, the runtime has " << devices;
  rlimit files{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  constexpr rlim_t kFilesNeeded = kRanks * (kRanks + 2) + 256;  // mesh, listeners, root, slack
  if (files.rlim_cur < kFilesNeeded) {
    if (files.rlim_max < kFilesNeeded) GTEST_SKIP() << "the open-files limit is below " << kFilesNeeded;
    files.rlim_cur = kFilesNeeded;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &files), 0);
  }
  std::vector<int> device_of(kRanks);
  for (int r = 0; r < kRanks; ++r) device_of[static_cast<std::size_t>(r)] = r;
  auto comms = make_comms(device_of);
  ASSERT_EQ(comms.size(), static_cast<std::size_t>(kRanks));
  std::vector<std::thread> ranks;
  std::vector<std::int64_t> got(kRanks, 0);
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      // Copies on the rank's own stream: a synchronous cudaMemcpy could wait for other ranks' streams.
      (void)cudaSetDevice(r);
      DeviceBuffer buf(3 * sizeof(std::int64_t));
      Stream s;
      const std::int64_t mine[3] = {r, 1, 2 * r};
      std::int64_t out[3] = {};
      (void)cudaMemcpyAsync(buf.get(), mine, sizeof mine, cudaMemcpyHostToDevice, s);
      EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), 3, ncclInt64, ncclSum, comms[static_cast<std::size_t>(r)], s),
                ncclSuccess);
      (void)cudaMemcpyAsync(out, buf.get(), sizeof out, cudaMemcpyDeviceToHost, s);
      s.sync();
      got[static_cast<std::size_t>(r)] = out[0] + out[1] + out[2];
    });
  }
  for (auto& t : ranks) t.join();
  const std::int64_t want = 3 * (kRanks * (kRanks - 1) / 2) + kRanks;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(got[static_cast<std::size_t>(r)], want) << "rank " << r;
    EXPECT_EQ(async_error(comms[static_cast<std::size_t>(r)]), ncclSuccess);
    EMU_NCCL_OK(ncclCommDestroy(comms[static_cast<std::size_t>(r)]));
  }
  (void)cudaSetDevice(0);
}

TEST(InProcess, NoThreadOrDescriptorLeaks) {
  std::vector<std::unique_ptr<Stream>> streams;
  for (int r = 0; r < 3; ++r) streams.push_back(std::make_unique<Stream>());
  DeviceBuffer warm(4);  // runtime state (allocator, legacy stream) created before the baseline
  (void)cudaDeviceSynchronize();
  const int threads = thread_count(), fds = open_fd_count();
  for (int round = 0; round < 3; ++round) {
    auto comms = make_comms({0, 1, 2});
    std::vector<std::unique_ptr<DeviceBuffer>> bufs;
    for (int r = 0; r < 3; ++r) {
      (void)cudaSetDevice(r);
      bufs.push_back(std::make_unique<DeviceBuffer>(4096));
      EMU_NCCL_OK(ncclAllReduce(bufs[r]->get(), bufs[r]->get(), 1024, ncclFloat32, ncclSum, comms[r], *streams[r]));
    }
    (void)cudaSetDevice(0);
    for (int r = 0; r < 3; ++r) {
      streams[r]->sync();
      EMU_NCCL_OK(round == 1 ? ncclCommAbort(comms[r]) : ncclCommDestroy(comms[r]));
    }
  }
  // The bootstrap root thread ends right after it has answered; give it a moment.
  EXPECT_TRUE(eventually([&] { return thread_count() == threads; }, 5.0)) << thread_count() << " vs " << threads;
  EXPECT_TRUE(eventually([&] { return open_fd_count() == fds; }, 5.0)) << open_fd_count() << " vs " << fds;
}

}  // namespace
}  // namespace emu_test
