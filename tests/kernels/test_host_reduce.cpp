// test_host_reduce.cpp — host_reduce / host_reduce_into / host_scale (the reduction loops of the
// hand-rolled collectives). Inputs are small integers (exactly representable in every dtype), so
// every comparison is exact: sum/max/min of such values involves no rounding.
// Outputs are poisoned first (NaN for floats, 0xDEADBEEF bytes for integers) so unwritten elements show.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "kernels/host_reduce.hpp"

namespace microddp::kernels {
namespace {

using core::ReduceOp;
using core::TensorView;

template <typename T>
std::vector<T> poisoned(std::size_t n) {
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    for (auto& x : v) x = std::numeric_limits<T>::quiet_NaN();
  } else {
    const unsigned char pattern[4] = {0xDE, 0xAD, 0xBE, 0xEF};
    auto* bytes = reinterpret_cast<unsigned char*>(v.data());
    for (std::size_t i = 0; i < n * sizeof(T); ++i) bytes[i] = pattern[i % 4];
  }
  return v;
}

// a_i = (i * 7) % 11 - 5 and b_i = (i * 5) % 13 - 6: small signed integers, mixed order, so max and
// min pick from both sides.
template <typename T>
T a_at(std::size_t i) {
  return static_cast<T>(static_cast<int>((i * 7) % 11) - 5);
}
template <typename T>
T b_at(std::size_t i) {
  return static_cast<T>(static_cast<int>((i * 5) % 13) - 6);
}

template <typename T>
T expect(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::Max:
      return a > b ? a : b;
    case ReduceOp::Min:
      return a < b ? a : b;
    default:
      return a + b;  // Sum, and Mean (divided later by the caller)
  }
}

template <typename T>
class HostReduce : public ::testing::Test {};
using DTypes = ::testing::Types<float, double, std::int32_t, std::int64_t>;
TYPED_TEST_SUITE(HostReduce, DTypes);

TYPED_TEST(HostReduce, OutOfPlaceAndInPlaceAllOps) {
  using T = TypeParam;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{1000}}) {
    std::vector<T> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = a_at<T>(i);
      b[i] = b_at<T>(i);
    }
    const auto count = static_cast<std::int64_t>(n);
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " op=" + std::string(core::reduce_op_name(op)));
      // Out of place.
      auto dst = poisoned<T>(n);
      host_reduce(TensorView::of(dst.data(), count), TensorView::of(a.data(), count), TensorView::of(b.data(), count),
                  op);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], expect(op, a[i], b[i])) << i;
      // dst aliases a (host_reduce_into) and dst aliases b.
      auto acc = a;
      host_reduce_into(TensorView::of(acc.data(), count), TensorView::of(b.data(), count), op);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(acc[i], expect(op, a[i], b[i])) << i;
      auto bb = b;
      host_reduce(TensorView::of(bb.data(), count), TensorView::of(a.data(), count), TensorView::of(bb.data(), count),
                  op);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(bb[i], expect(op, a[i], b[i])) << i;
    }
  }
}

TEST(HostReduceErrors, MismatchedBuffersThrow) {
  std::vector<float> f(4, 1.0f), f3(3, 1.0f);
  std::vector<double> d(4, 1.0);
  std::vector<std::int32_t> i32(4, 1);
  EXPECT_THROW(host_reduce_into(TensorView::of(f.data(), 4), TensorView::of(f3.data(), 3), ReduceOp::Sum), core::Error);
  EXPECT_THROW(host_reduce_into(TensorView::of(f.data(), 4), TensorView::of(d.data(), 4), ReduceOp::Sum), core::Error);
  EXPECT_THROW(host_reduce(TensorView::of(f.data(), 4), TensorView::of(f.data(), 4), TensorView::of(i32.data(), 4),
                           ReduceOp::Max),
               core::Error);
  // A device view is refused by the host loops.
  EXPECT_THROW(
      host_reduce_into(TensorView::of(f.data(), 4, core::Device::Cuda), TensorView::of(f.data(), 4), ReduceOp::Sum),
      core::Error);
  EXPECT_EQ(f[0], 1.0f) << "nothing written on error";
}

TEST(HostScale, FloatingPointScalesAndIntegersThrow) {
  std::vector<float> f = {1.0f, -2.0f, 3.0f};
  host_scale(TensorView::of(f.data(), 3), 0.5);  // exact: power-of-two factor
  EXPECT_EQ(f, (std::vector<float>{0.5f, -1.0f, 1.5f}));
  std::vector<double> d = {1.0, -2.0, 3.0};
  host_scale(TensorView::of(d.data(), 3), 0.25);
  EXPECT_EQ(d, (std::vector<double>{0.25, -0.5, 0.75}));
  // Mean over 3 ranks: the factor 1/3 in float is computed in float (contract: element precision).
  std::vector<float> m = {3.0f};
  host_scale(TensorView::of(m.data(), 1), 1.0 / 3.0);
  EXPECT_EQ(m[0], 3.0f * static_cast<float>(1.0 / 3.0));
  std::vector<std::int32_t> i = {1, 2};
  EXPECT_THROW(host_scale(TensorView::of(i.data(), 2), 2.0), core::Error);
  std::vector<std::int64_t> l = {1, 2};
  EXPECT_THROW(host_scale(TensorView::of(l.data(), 2), 2.0), core::Error);
  host_scale(TensorView::of(f.data(), 0), 2.0);  // empty: fine
}

}  // namespace
}  // namespace microddp::kernels
