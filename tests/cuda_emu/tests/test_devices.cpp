// test_devices.cpp — which devices a process sees: CUDA_EMU_NODE_GPUS, CUDA_VISIBLE_DEVICES (as the
// CUDA runtime reads it) and CUDA_EMU_FAIL_INIT. ctest runs this program once per environment and
// tells it what to expect:
//   --expect-physical=2,0      visible device i must be physical device (PCI bus id) list[i]
//   --expect-error=NAME        cudaGetDeviceCount and every later device call fail with NAME
// Also the UUIDs (a hash of host name and physical index) and the properties' identification.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "config.hpp"
#include "devices.hpp"
#include "emu_internal.hpp"

namespace cuda_emu::test {
namespace {

std::vector<int> g_expect_physical;
bool g_have_expect_physical = false;
std::string g_expect_error;

TEST(Devices, VisibleDevicesAreTheExpectedPhysicalOnes) {
  if (!g_expect_error.empty()) GTEST_SKIP() << "this run expects an initialisation failure";
  ASSERT_TRUE(g_have_expect_physical) << "pass --expect-physical=...";
  int count = -1;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (g_expect_physical.empty()) {
    EXPECT_EQ(e, cudaErrorNoDevice) << "zero visible devices is cudaErrorNoDevice, as the CUDA runtime reports";
    EXPECT_EQ(count, 0);
    EXPECT_EQ(cudaErrorNoDevice, cudaSetDevice(0));
    void* p = nullptr;
    EXPECT_EQ(cudaErrorNoDevice, cudaMalloc(&p, 16));
    (void)cudaGetLastError();
    return;
  }
  ASSERT_EQ(e, cudaSuccess);
  ASSERT_EQ(count, static_cast<int>(g_expect_physical.size()));
  std::vector<std::array<unsigned char, 16>> uuids;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    ASSERT_EQ(cudaSuccess, cudaGetDeviceProperties(&p, d));
    EXPECT_EQ(p.pciBusID, g_expect_physical[static_cast<std::size_t>(d)]) << "visible device " << d;
    EXPECT_NE(std::string(p.name).find("emulated"), std::string::npos) << p.name;
    EXPECT_EQ(p.major, 9);
    EXPECT_EQ(p.minor, 0);
    EXPECT_GT(p.multiProcessorCount, 0);
    std::array<unsigned char, 16> u{};
    std::memcpy(u.data(), p.uuid.bytes, 16);
    EXPECT_EQ(u, device_uuid(d)) << "the internal API agrees with the properties";
    EXPECT_EQ(u, uuid_for(host_name(), p.pciBusID)) << "a hash of (host, physical index)";
    uuids.push_back(u);
  }
  for (std::size_t i = 0; i < uuids.size(); ++i) {
    for (std::size_t j = i + 1; j < uuids.size(); ++j) EXPECT_NE(uuids[i], uuids[j]) << i << " vs " << j;
  }
  // Each host thread has its own current device, 0 until set.
  ASSERT_EQ(cudaSuccess, cudaSetDevice(count - 1));
  int current = -1;
  ASSERT_EQ(cudaSuccess, cudaGetDevice(&current));
  EXPECT_EQ(current, count - 1);
  EXPECT_EQ(current_device(), count - 1);
  EXPECT_EQ(cudaErrorInvalidDevice, cudaSetDevice(count));
  EXPECT_EQ(cudaErrorInvalidDevice, cudaGetLastError());
  cudaDeviceProp p{};
  EXPECT_EQ(cudaErrorInvalidDevice, cudaGetDeviceProperties(&p, count));
  (void)cudaGetLastError();
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  int driver = 0, runtime = 0;
  ASSERT_EQ(cudaSuccess, cudaDriverGetVersion(&driver));
  ASSERT_EQ(cudaSuccess, cudaRuntimeGetVersion(&runtime));
  EXPECT_EQ(driver, 13000);
  EXPECT_EQ(runtime, 13000);
}

TEST(Devices, MemoryBelongsToTheCurrentDevice) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    (void)cudaGetLastError();
    GTEST_SKIP() << "needs two visible devices";
  }
  void* p0 = nullptr;
  void* p1 = nullptr;
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  ASSERT_EQ(cudaSuccess, cudaMalloc(&p0, 64));
  ASSERT_EQ(cudaSuccess, cudaSetDevice(1));
  ASSERT_EQ(cudaSuccess, cudaMalloc(&p1, 64));
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaSuccess, cudaPointerGetAttributes(&a, p0));
  EXPECT_EQ(a.device, 0);
  ASSERT_EQ(cudaSuccess, cudaPointerGetAttributes(&a, p1));
  EXPECT_EQ(a.device, 1);
  EXPECT_EQ(lookup_pointer(p1).device, 1);
  ASSERT_EQ(cudaSuccess, cudaMemcpy(p0, p1, 64, cudaMemcpyDeviceToDevice)) << "peer copy (unified addressing)";
  ASSERT_EQ(cudaSuccess, cudaFree(p1));
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  ASSERT_EQ(cudaSuccess, cudaFree(p0));
}

TEST(Devices, InitialisationFailureIsReportedEverywhere) {
  if (g_expect_error.empty()) GTEST_SKIP() << "this run expects devices";
  int count = -1;
  const cudaError_t e = cudaGetDeviceCount(&count);
  EXPECT_STREQ(cudaGetErrorName(e), g_expect_error.c_str());
  EXPECT_EQ(count, 0);
  EXPECT_EQ(e, cudaGetLastError());
  void* p = nullptr;
  EXPECT_EQ(e, cudaMalloc(&p, 16));
  EXPECT_EQ(e, cudaSetDevice(0));
  cudaStream_t s = nullptr;
  EXPECT_EQ(e, cudaStreamCreate(&s));
  // As the real runtime, the driver's version is still readable (microddp's error message names
  // it): 0 = no driver installed, else CUDA_EMU_DRIVER_VERSION (13000 when not set).
  int version = -1;
  EXPECT_EQ(cudaSuccess, cudaDriverGetVersion(&version));
  const char* want = std::getenv("CUDA_EMU_DRIVER_VERSION");
  EXPECT_EQ(version, want != nullptr ? std::atoi(want) : 13000);
  EXPECT_EQ(cudaSuccess, cudaRuntimeGetVersion(&version));
  (void)cudaGetLastError();
}

TEST(Devices, VisibleDevicesParsing) {
  EXPECT_EQ(parse_visible_devices(nullptr, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(parse_visible_devices("", 3), std::vector<int>{});
  EXPECT_EQ(parse_visible_devices("2,0", 3), (std::vector<int>{2, 0}));
  EXPECT_EQ(parse_visible_devices("1,7,0", 3), (std::vector<int>{1})) << "the list ends at an invalid index";
  EXPECT_EQ(parse_visible_devices("1,1", 3), (std::vector<int>{1})) << "... or a repeated one";
  EXPECT_EQ(parse_visible_devices("GPU-1234,0", 3), std::vector<int>{}) << "UUID syntax is not emulated";
  EXPECT_EQ(parse_visible_devices("-1", 3), std::vector<int>{});
  EXPECT_NE(uuid_for("node-a", 0), uuid_for("node-b", 0)) << "another host, another GPU";
  EXPECT_NE(uuid_for("node-a", 0), uuid_for("node-a", 1));
  EXPECT_EQ(uuid_for("node-a", 1), uuid_for("node-a", 1)) << "ranks sharing a GPU agree on its UUID";
}

}  // namespace
}  // namespace cuda_emu::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--expect-physical=", 0) == 0) {
      cuda_emu::test::g_have_expect_physical = true;
      std::stringstream list(a.substr(std::strlen("--expect-physical=")));
      std::string item;
      while (std::getline(list, item, ',')) cuda_emu::test::g_expect_physical.push_back(std::stoi(item));
    } else if (a.rfind("--expect-error=", 0) == 0) {
      cuda_emu::test::g_expect_error = a.substr(std::strlen("--expect-error="));
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  return RUN_ALL_TESTS();
}
