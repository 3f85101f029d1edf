// Small reads: item() of a one-element tensor and at(index) of one element of
// any view, in every dtype, on the host and on a device (a real GPU or the
// fake runtime). Expected values come from the row-major list the tensor was
// made from, indexed by hand for each view, never from the code under test.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/tensor.hpp"
#include "test_core_util.hpp"

using strata::Device;
using strata::DType;
using strata::Shape;
using strata::Tensor;

namespace {

constexpr DType kAllDTypes[] = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                                DType::boolean, DType::i32, DType::i64};

// Distinct values every dtype holds exactly (bool: alternating).
std::vector<double> values_for(DType dt, std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k)
    v[static_cast<std::size_t>(k)] = dt == DType::boolean
                                         ? static_cast<double>(k % 2)
                                         : static_cast<double>((k * 37) % 101) - 50;
  return v;
}

// [2, 3, 4] of `values` (row-major) in dtype dt on dev.
Tensor make(const std::vector<double>& values, DType dt, Device dev) {
  return Tensor::from_vector(values, {2, 3, 4}).to(dt).to(dev);
}

}  // namespace

TEST_CASE("core: at reads one element of any view, every dtype, host and device",
          "[core][access]") {
  core_test::DeviceScope scope;
  REQUIRE(scope.device);
  for (DType dt : kAllDTypes) {
    for (const Device dev : {Device::cpu(), *scope.device}) {
      INFO(strata::dtype_name(dt) << " on " << dev.str());
      const std::vector<double> v = values_for(dt, 24);
      const auto want = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
        return v[static_cast<std::size_t>(i * 12 + j * 4 + k)];
      };
      const Tensor t = make(v, dt, dev);
      const Tensor tr = t.transpose(0, 2);                              // [4, 3, 2]
      const Tensor nar = t.narrow(2, 1, 2).narrow(0, 1, 1);             // [1, 3, 2], offset 13
      const Tensor bc = t.narrow(1, 1, 1).expand({2, 5, 4});            // stride 0 in dim 1
      const Tensor fl = t.flip(1).slice(2, strata::Slice{{}, {}, -3});  // [2, 3, 2]
      for (std::int64_t i = 0; i < 2; ++i)
        for (std::int64_t j = 0; j < 3; ++j)
          for (std::int64_t k = 0; k < 4; ++k) {
            INFO("index " << i << ", " << j << ", " << k);
            REQUIRE(t.at({i, j, k}) == want(i, j, k));
            REQUIRE(t.at({i - 2, j - 3, k - 4}) == want(i, j, k));  // from the end
            REQUIRE(t.item({i, j, k}) == want(i, j, k));            // the older name
            REQUIRE(tr.at({k, j, i}) == want(i, j, k));
            if (k < 2) REQUIRE(nar.at({0, j, k}) == want(1, j, k + 1));
            if (k < 2) REQUIRE(fl.at({i, j, k}) == want(i, 2 - j, 3 - 3 * k));
            for (std::int64_t m : {0, 4, -1}) REQUIRE(bc.at({i, m, k}) == want(i, 1, k));
          }
      // item(): a one-element tensor of any rank, at any offset.
      CHECK(t.narrow(0, 1, 1).narrow(1, 2, 1).narrow(2, 3, 1).item() == want(1, 2, 3));
      CHECK(t.select(0, 1).select(0, 0).select(0, 2).item() == want(1, 0, 2));  // 0-d
      CHECK(tr.narrow(0, 3, 1).narrow(1, 1, 1).narrow(2, 0, 1).item() == want(0, 1, 3));
      CHECK(t.narrow(2, 1, 1).select(1, 2).select(0, 1).expand({1, 1}).item() == want(1, 2, 1));
      // Typed reads agree with the double.
      const Tensor one = t.select(0, 1).select(0, 1).select(0, 1);  // want(1, 1, 1)
      CHECK(one.item<float>() == static_cast<float>(want(1, 1, 1)));
      CHECK(one.item<int>() == static_cast<int>(want(1, 1, 1)));
      CHECK(one.item<bool>() == (want(1, 1, 1) != 0));
      CHECK(t.at<std::int64_t>({1, 2, -1}) == static_cast<std::int64_t>(want(1, 2, 3)));
    }
  }
}

TEST_CASE("core: a device tensor's at and item copy back one element only", "[core][access]") {
  core_test::DeviceScope scope;
  REQUIRE(scope.device);
  core_test::FakeRuntime* fake = scope.fake();
  if (fake == nullptr) return;  // a real GPU: the values were checked above
  const Tensor t = Tensor::arange(12, DType::f64).reshape({3, 4}).to(*scope.device);
  const int before = fake->byte_copies, strided = fake->strided_copies;
  CHECK(t.transpose(0, 1).at({3, 2}) == 11.0);
  CHECK(t.select(0, 2).select(0, 1).item() == 9.0);
  CHECK(t.at<std::int64_t>({-1, 0}) == 8);
  CHECK(fake->byte_copies == before + 3);  // one per read, no whole-tensor copy
  CHECK(fake->strided_copies == strided);
}

TEST_CASE("core: typed reads convert exactly or refuse", "[core][access]") {
  // Beyond 2^53 an int64 is read exactly, not through a double.
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  const Tensor ids = Tensor::from_vector(std::vector<std::int64_t>{big, -big, 1LL << 40}, {3});
  CHECK(ids.at<std::int64_t>({0}) == big);
  CHECK(ids.at<std::int64_t>({-2}) == -big);
  CHECK(ids.at<std::uint64_t>({0}) == static_cast<std::uint64_t>(big));
  CORE_REQUIRE_ERROR(ids.at<std::int32_t>({2}), "Tensor::at", "value 1099511627776", "i64",
                     "32-bit signed");
  CORE_REQUIRE_ERROR(ids.at<std::uint32_t>({1}), "Tensor::at", "-9007199254740993",
                     "32-bit unsigned");
  // A floating value into an integer truncates toward zero; NaN and inf refuse.
  const Tensor f = Tensor::from_vector(std::vector<float>{-2.75f, 3.5f, NAN, INFINITY}, {4});
  CHECK(f.at<int>({0}) == -2);
  CHECK(f.at<std::int64_t>({1}) == 3);
  CHECK(f.at<bool>({2}));  // NaN is nonzero
  CHECK(f.at<double>({0}) == -2.75);
  CORE_REQUIRE_ERROR(f.at<int>({2}), "Tensor::at", "value nan", "f32", "64-bit integer");
  CORE_REQUIRE_ERROR(f.at<std::int64_t>({3}), "Tensor::at", "value inf", "64-bit integer");
  CORE_REQUIRE_ERROR(Tensor::full({}, 1e30, DType::f64).item<std::int64_t>(), "Tensor::item",
                     "value 1e+30");
  CHECK(Tensor::full({1}, -3.0, DType::bf16).item<std::int16_t>() == -3);
  CHECK(Tensor::full({1, 1}, 1.0, DType::boolean).item<int>() == 1);
  CHECK(Tensor::full({}, 65504.0, DType::f16).item<float>() == 65504.f);
}

TEST_CASE("core: item and at refuse a bad tensor or index, naming it", "[core][access]") {
  const Tensor t = Tensor::zeros({2, 3, 4});
  CORE_REQUIRE_ERROR(t.item(), "Tensor::item", "exactly one element", "[2, 3, 4]", "24");
  CORE_REQUIRE_ERROR(Tensor::zeros({0}).item(), "Tensor::item", "[0]", "has 0");
  CORE_REQUIRE_ERROR(t.narrow(0, 0, 1).item<float>(), "Tensor::item", "[1, 3, 4]", "12");
  CORE_REQUIRE_ERROR(Tensor().item(), "Tensor::item", "undefined");
  CORE_REQUIRE_ERROR(t.at({1, 2}), "Tensor::at", "index [1, 2]", "2 entries", "3-d", "[2, 3, 4]");
  CORE_REQUIRE_ERROR(t.at({}), "Tensor::at", "index []", "0 entries");
  CORE_REQUIRE_ERROR(t.at({1, 2, 4}), "Tensor::at", "index 4", "dim 2", "size 4");
  CORE_REQUIRE_ERROR(t.at({-3, 0, 0}), "Tensor::at", "index -3", "dim 0", "size 2");
  CORE_REQUIRE_ERROR(t.at<int>({0, 3, 0}), "Tensor::at", "index 3", "dim 1", "size 3");
  CORE_REQUIRE_ERROR(Tensor().at({0}), "Tensor::at", "undefined");
  CORE_REQUIRE_ERROR(t.item({0, 0, 9}), "Tensor::item", "index 9");
  CORE_REQUIRE_ERROR(t.set_item({0, 0, 9}, 1.0), "Tensor::set_item", "index 9");
  // A 0-d tensor is read with an empty index or item().
  const Tensor s = Tensor::full({}, 2.5, DType::f64);
  CHECK(s.at({}) == 2.5);
  CHECK(s.item() == 2.5);
  CORE_REQUIRE_ERROR(s.at({0}), "Tensor::at", "1 entries", "0-d");
}
