// The CUDA DeviceRuntime through the public Tensor API: round trips between
// host and device, strided copies in every direction, errors that leave the
// process usable. Runs only where a GPU is present (main.cpp exits 77 else).
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/device_runtime.hpp"
#include "strata/registry.hpp"
#include "strata/tensor.hpp"

using strata::Device;
using strata::DType;
using strata::Tensor;

namespace {

const Device kGpu = Device::cuda(0);

// Host tensors equal element for element (exact: copies must not round).
void require_equal(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  const auto g = got.to_vector<double>();
  const auto w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    REQUIRE(g[i] == w[i]);
  }
}

}  // namespace

TEST_CASE("cuda backend is registered and available", "[cuda][runtime]") {
  const strata::BackendInfo* b = strata::Registry::get().backend("cuda");
  REQUIRE(b != nullptr);
  CHECK(b->compiled);
  CHECK(b->available);
  strata::DeviceRuntime* rt = strata::device_runtime(strata::DeviceType::cuda);
  REQUIRE(rt != nullptr);
  REQUIRE(rt->device_count() >= 1);
  CHECK(rt->unavailable_reason().empty());
  const std::string desc = rt->describe(0);
  INFO(desc);
  CHECK(desc.find("cuda:0") != std::string::npos);
  CHECK(desc.find("SMs") != std::string::npos);
}

TEST_CASE("host <-> device round trips keep every bit", "[cuda][runtime]") {
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const std::uint64_t seed = 101 + static_cast<int>(dt);
    INFO("dtype " << strata::dtype_name(dt) << " seed " << seed);
    const Tensor h = Tensor::randn({3, 5, 7}, seed, dt);
    const Tensor d = h.to(kGpu);
    CHECK(d.device() == kGpu);
    require_equal(d.to(Device::cpu()), h);
  }
  const Tensor hb = Tensor::rand({257}, 7).to(DType::f32);
  std::vector<bool> bits;
  for (double x : hb.to_vector<double>()) bits.push_back(x < 0.4);
  std::vector<bool> copy = bits;
  const Tensor mb = Tensor::from_vector<bool>(copy, {257}, kGpu);
  CHECK(mb.to_vector<bool>() == bits);
}

TEST_CASE("strided copies within the device and across", "[cuda][runtime]") {
  const std::uint64_t seed = 2024;
  INFO("seed " << seed);
  const Tensor h = Tensor::randn({4, 6, 10}, seed, DType::f32);
  const Tensor d = h.to(kGpu);

  SECTION("device transpose -> contiguous on device (strided kernel)") {
    const Tensor dt = d.transpose(0, 2).contiguous();
    CHECK(dt.device() == kGpu);
    CHECK(dt.is_contiguous());
    require_equal(dt.to(Device::cpu()), h.transpose(0, 2).contiguous());
  }
  SECTION("negative and sliced strides on device") {
    const Tensor v = d.flip(1).slice(2, 1, 9, 3);
    require_equal(v.contiguous().to(Device::cpu()), h.flip(1).slice(2, 1, 9, 3).contiguous());
  }
  SECTION("broadcast (stride 0) source on device") {
    const Tensor row = d.select(0, 2).select(0, 3);  // [10]
    const Tensor dst = Tensor::empty({5, 10}, DType::f32, kGpu);
    dst.copy_from(row.unsqueeze(0).expand({5, 10}));
    const Tensor want = h.select(0, 2).select(0, 3).unsqueeze(0).expand({5, 10}).contiguous();
    require_equal(dst.to(Device::cpu()), want);
  }
  SECTION("host strided -> device strided") {
    const Tensor dst_buf = Tensor::full({6, 4, 20}, -7.0, DType::f32, kGpu);
    const Tensor dst = dst_buf.transpose(0, 1).slice(2, 0, 20, 2);  // [4, 6, 10], strides odd
    dst.copy_from(h);
    require_equal(dst.to(Device::cpu()).contiguous(), h);
    // The skipped columns keep their value.
    const auto all = dst_buf.to_vector<double>();
    for (std::size_t i = 1; i < all.size(); i += 2) REQUIRE(all[i] == -7.0);
  }
  SECTION("device strided -> host strided") {
    const Tensor hdst_buf = Tensor::zeros({10, 6, 4}, DType::f32);
    const Tensor hdst = hdst_buf.permute({2, 1, 0});
    hdst.copy_from(d.flip(2));
    require_equal(hdst.contiguous(), h.flip(2).contiguous());
  }
  SECTION("device -> device, f64 and 2-byte types") {
    for (DType dt : {DType::f64, DType::f16}) {
      const Tensor hx = Tensor::randn({9, 33}, seed + 1, dt);
      const Tensor dx = hx.to(kGpu);
      const Tensor dy = Tensor::empty({33, 9}, dt, kGpu);
      dy.copy_from(dx.transpose(0, 1));
      require_equal(dy.to(Device::cpu()), hx.transpose(0, 1).contiguous());
    }
  }
  SECTION("batched transposes with partial tiles (tiled transpose kernel)") {
    for (DType dt : {DType::f32, DType::f64, DType::f16}) {
      const Tensor hx = Tensor::randn({3, 70, 45}, seed + 2, dt);
      const Tensor dx = hx.to(kGpu);
      require_equal(dx.transpose(1, 2).contiguous().to(Device::cpu()),
                    hx.transpose(1, 2).contiguous());
      // A broadcast leading dim and a sliced source.
      const Tensor src =
          dx.select(0, 1).slice(0, 3, 67).transpose(0, 1).unsqueeze(0).expand({4, 45, 64});
      const Tensor want =
          hx.select(0, 1).slice(0, 3, 67).transpose(0, 1).unsqueeze(0).expand({4, 45, 64});
      require_equal(src.contiguous().to(Device::cpu()), want.contiguous());
    }
  }
  SECTION("single elements") {
    CHECK(d.item({1, 2, 3}) == h.item({1, 2, 3}));
    d.set_item({3, 5, 9}, 42.5);
    CHECK(d.item({3, 5, 9}) == 42.5);
  }
}

TEST_CASE("a failed allocation names the bytes and leaves the device usable",
          "[cuda][runtime][errors]") {
  const std::int64_t huge = std::int64_t(1) << 48;  // 1 PiB of f32 elements / 4
  bool threw = false;
  try {
    (void)Tensor::empty({huge}, DType::f32, kGpu);
  } catch (const strata::Error& e) {
    threw = true;
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(std::to_string(huge * 4)) != std::string::npos);
    CHECK(msg.find("cudaMalloc") != std::string::npos);
  }
  CHECK(threw);
  // The next allocation and kernel launch work.
  const Tensor h = Tensor::randn({64, 3}, 5, DType::f32);
  const Tensor d = h.to(kGpu);
  require_equal(d.transpose(0, 1).contiguous().to(Device::cpu()), h.transpose(0, 1).contiguous());
}

TEST_CASE("a bad device index is an error, not a crash", "[cuda][runtime][errors]") {
  strata::DeviceRuntime* rt = strata::device_runtime(strata::DeviceType::cuda);
  REQUIRE(rt != nullptr);
  const int n = rt->device_count();
  CHECK_THROWS_AS(rt->allocate(16, n), strata::Error);
  CHECK_THROWS_AS(rt->describe(-1), strata::Error);
}
