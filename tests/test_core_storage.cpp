// Storage (allocation, wrapping, keep-alive), bounds and rank errors,
// may_overlap, printing, shape helpers and devices.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../core/src/host_block_cache.hpp"
#include "catch.hpp"
#include "strata/tensor.hpp"
#include "test_core_util.hpp"

using strata::Device;
using strata::DType;
using strata::Shape;
using strata::Storage;
using strata::Tensor;

TEST_CASE("core: host storage is aligned, and zero bytes work", "[core][storage]") {
  for (std::size_t n : {0u, 1u, 3u, 64u, 1000u}) {
    INFO("nbytes " << n);
    auto s = Storage::allocate(n, Device::cpu());
    REQUIRE(s->data() != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(s->data()) % 64 == 0);
    CHECK(s->nbytes() == n);
    CHECK(s->owns_memory());
  }
  const Tensor e = Tensor::empty({3, 0, 2});
  CHECK(e.numel() == 0);
  CHECK(e.storage()->nbytes() == 0);
  CHECK(e.to_vector<float>().empty());
  CHECK(e.clone().numel() == 0);
  CHECK(e.byte_extent() == std::pair<std::int64_t, std::int64_t>{0, 0});
}

TEST_CASE("core: wrapped storage keeps its owner alive and never frees", "[core][storage]") {
  std::weak_ptr<void> watch;
  Tensor view;
  {
    auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
    watch = owner;
    auto s = Storage::wrap(owner->data(), owner->size() * sizeof(float), Device::cpu(), owner);
    CHECK_FALSE(s->owns_memory());
    const Tensor t = Tensor::from_storage(s, {2, 3}, {3, 1}, 0, DType::f32);
    view = t.transpose(0, 1).select(0, 2);  // [3, 6]
  }
  REQUIRE_FALSE(watch.expired());  // only the view holds the owner now
  CHECK(view.to_vector<float>() == std::vector<float>{3, 6});
  Tensor copy = view;
  view = Tensor();
  REQUIRE_FALSE(watch.expired());
  copy = Tensor();
  CHECK(watch.expired());

  float stack[4] = {1, 2, 3, 4};  // freeing this would crash under ASan
  {
    const Tensor t = Tensor::from_storage(Storage::wrap(stack, sizeof stack, Device::cpu()), {4},
                                          {1}, 0, DType::f32);
    t.fill(9.0);
  }
  CHECK(stack[3] == 9.0f);
  CORE_REQUIRE_ERROR(Storage::wrap(nullptr, 8, Device::cpu()), "Storage::wrap", "8");
  CHECK(Storage::wrap(nullptr, 0, Device::cpu())->nbytes() == 0);
  // A view reaching past a wrapped buffer is refused.
  CORE_REQUIRE_ERROR(Tensor::from_storage(Storage::wrap(stack, sizeof stack, Device::cpu()), {5},
                                          {1}, 0, DType::f32),
                     "Tensor::from_storage", "element 4", "4 f32 elements");
}

TEST_CASE("core: device storage without a usable device", "[core][storage]") {
  strata::DeviceRuntime* rt = strata::device_runtime(strata::DeviceType::cuda);
  if (rt == nullptr) {
    CORE_REQUIRE_ERROR(Storage::allocate(16, Device::cuda(0)), "Storage::allocate",
                       "cuda backend not built");
    CORE_REQUIRE_ERROR(Tensor::zeros({2}, DType::f32, Device::cuda(0)), "cuda backend not built");
  } else if (rt->device_count() == 0) {
    CORE_REQUIRE_ERROR(Storage::allocate(16, Device::cuda(0)), "Storage::allocate", "cuda:0",
                       "unavailable");
  } else {
    const int n = rt->device_count();
    CORE_REQUIRE_ERROR(Storage::allocate(16, Device::cuda(n)), "Storage::allocate",
                       "cuda:" + std::to_string(n), "out of range");
    CHECK(Storage::allocate(0, Device::cuda(0))->nbytes() == 0);
  }
  core_test::DeviceScope scope;  // with a device: zero bytes and bad indices
  REQUIRE(scope.device);
  CHECK(Tensor::empty({0}, DType::f32, *scope.device).numel() == 0);
  CORE_REQUIRE_ERROR(Storage::allocate(4, Device::cuda(99)), "Storage::allocate", "cuda:99");
}

TEST_CASE("core: out-of-bounds and malformed views are rejected", "[core][errors]") {
  const Tensor a = Tensor::arange(24, DType::f32).reshape({2, 3, 4});
  CORE_REQUIRE_ERROR(a.as_strided({2, 3, 5}, {12, 4, 1}), "Tensor::as_strided", "element 24",
                     "24 f32 elements");
  CORE_REQUIRE_ERROR(a.as_strided({4}, {1}, 21), "Tensor::as_strided", "element 24");
  CORE_REQUIRE_ERROR(a.as_strided({4}, {1}, -1), "Tensor::as_strided", "negative offset -1");
  CORE_REQUIRE_ERROR(a.as_strided({3}, {-1}, 1), "Tensor::as_strided", "element -1",
                     "before the start");
  CORE_REQUIRE_ERROR(a.as_strided({3, -1}, {1, 1}, 0), "Tensor::as_strided", "negative size -1");
  CORE_REQUIRE_ERROR(a.as_strided({3}, {1, 1}, 0), "Tensor::as_strided", "strides [1, 1]");
  CHECK(a.as_strided({4}, {-1}, 3).to_vector<float>() == std::vector<float>{3, 2, 1, 0});
  CHECK(a.as_strided({0, 7}, {1000, 1000}, 1000).numel() == 0);  // empty views are always valid
  CORE_REQUIRE_ERROR(a.slice(2, 0, 5), "Tensor::slice", "stop 5", "size 4");
  CORE_REQUIRE_ERROR(a.slice(0, -3, 2), "Tensor::slice", "start -3");
  CORE_REQUIRE_ERROR(a.slice(1, 0, 3, 0), "Tensor::slice", "step 0");
  CORE_REQUIRE_ERROR(a.slice(3, 0, 1), "Tensor::slice", "dim 3");
  CORE_REQUIRE_ERROR(a.select(1, 3), "Tensor::select", "index 3", "size 3");
  CORE_REQUIRE_ERROR(a.select(1, -4), "Tensor::select", "index -4");
  CORE_REQUIRE_ERROR(a.select(-4, 0), "Tensor::select", "dim -4");
  CORE_REQUIRE_ERROR(a.narrow(2, 2, 3), "Tensor::narrow", "length 3");
  CORE_REQUIRE_ERROR(a.narrow(2, 5, 0), "Tensor::narrow", "start 5");
  CORE_REQUIRE_ERROR(a.expand({2, 6, 4}), "Tensor::expand", "dim 1 of size 3", "6");
  CORE_REQUIRE_ERROR(a.expand({3, 4}), "Tensor::expand", "[3, 4]");
  CORE_REQUIRE_ERROR(a.expand({-1, 2, 3, 4}), "Tensor::expand", "-1");
  CORE_REQUIRE_ERROR(a.permute({0, 1}), "Tensor::permute", "[0, 1]");
  CORE_REQUIRE_ERROR(a.permute({0, 2, 0}), "Tensor::permute", "repeats dim 0");
  CORE_REQUIRE_ERROR(a.permute({0, 1, 3}), "Tensor::permute", "dim 3");
  CORE_REQUIRE_ERROR(a.transpose(0, 5), "Tensor::transpose", "dim 5");
  CORE_REQUIRE_ERROR(a.squeeze(0), "Tensor::squeeze", "size 2");
  CORE_REQUIRE_ERROR(a.unsqueeze(4), "Tensor::unsqueeze", "dim 4");
  CORE_REQUIRE_ERROR(a.flip(-5), "Tensor::flip", "dim -5");
  CORE_REQUIRE_ERROR(a.item({0, 3, 0}), "Tensor::item", "index 3");
  CORE_REQUIRE_ERROR(a.item({0, 0}), "Tensor::item", "2 entries");
  CORE_REQUIRE_ERROR(a.set_item({2, 0, 0}, 1.0), "Tensor::set_item", "index 2");
  CORE_REQUIRE_ERROR(a.size(3), "Tensor::size", "dim 3");
  CORE_REQUIRE_ERROR(Tensor::arange(-2), "Tensor::arange", "-2");
  CORE_REQUIRE_ERROR(Tensor().slice(0, 0, 1), "Tensor::slice");
}

TEST_CASE("core: at most 8 dims, and huge shapes throw instead of wrapping", "[core][errors]") {
  const Shape eight(8, 2);
  const Tensor t = Tensor::zeros(eight);
  CHECK(t.dim() == 8);
  CORE_REQUIRE_ERROR(Tensor::zeros(Shape(9, 1)), "Tensor::empty", "9 dims", "at most 8");
  CORE_REQUIRE_ERROR(t.unsqueeze(0), "Tensor::unsqueeze", "at most 8");
  CORE_REQUIRE_ERROR(t.expand(Shape(9, 2)), "Tensor::expand", "9 dims");
  CORE_REQUIRE_ERROR(t.reshape(Shape(9, 1)), "Tensor::reshape", "9 dims");
  CORE_REQUIRE_ERROR(t.as_strided(Shape(9, 1), Shape(9, 1), 0), "Tensor::as_strided", "9 dims");
  const std::int64_t big = std::int64_t{1} << 40;
  CORE_REQUIRE_ERROR(Tensor::empty({big, big}), "Tensor::empty", "overflow");
  CORE_REQUIRE_ERROR(Tensor::empty({0, big, big}), "Tensor::empty", "overflow");
  CORE_REQUIRE_ERROR(Tensor::empty({std::int64_t{1} << 62}, DType::f64), "Tensor::empty",
                     "overflow");
  CORE_REQUIRE_ERROR(Tensor::empty({-3}), "Tensor::empty", "negative size -3");
  CORE_REQUIRE_ERROR(strata::shape_numel({big, big, big}), "shape_numel", "overflow");
  const Tensor s = Tensor::zeros({4});
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max() / 2;
  CORE_REQUIRE_ERROR(s.as_strided({3, 3}, {huge, huge}, 0), "Tensor::as_strided", "overflow");
  CORE_REQUIRE_ERROR(s.as_strided({2}, {1}, std::numeric_limits<std::int64_t>::max()),
                     "Tensor::as_strided");
  CORE_REQUIRE_ERROR(s.as_strided({huge}, {1}, 0), "Tensor::as_strided");
}

TEST_CASE("core: may_overlap", "[core][overlap]") {
  const Tensor a = Tensor::arange(20, DType::f32).reshape({4, 5});
  const Tensor b = Tensor::arange(20, DType::f32).reshape({4, 5});
  CHECK(may_overlap(a, a));
  CHECK_FALSE(may_overlap(a, b));
  CHECK(may_overlap(a, a.transpose(0, 1)));
  CHECK_FALSE(may_overlap(a.narrow(0, 0, 2), a.narrow(0, 2, 2)));  // adjacent, disjoint
  CHECK(may_overlap(a.narrow(0, 0, 3), a.narrow(0, 2, 2)));
  CHECK(may_overlap(a.select(1, 0), a.select(1, 1)));  // interleaved: conservative
  CHECK_FALSE(may_overlap(a.select(0, 0), a.select(0, 3)));
  CHECK(may_overlap(a.select(0, 3).flip(0), a.narrow(0, 3, 1)));
  CHECK(may_overlap(a.select(0, 1).unsqueeze(0).expand({3, 5}), a.select(0, 1)));
  CHECK_FALSE(may_overlap(a.narrow(0, 0, 0), a));  // empty touches nothing
  CHECK_FALSE(may_overlap(Tensor(), a));
  // Two wraps of one buffer alias even though they are different Storage objects.
  std::vector<float> buf(8, 1.0f);
  const auto w1 = Storage::wrap(buf.data(), 32, Device::cpu());
  const auto w2 = Storage::wrap(buf.data() + 4, 16, Device::cpu());
  const Tensor t1 = Tensor::from_storage(w1, {8}, {1}, 0, DType::f32);
  const Tensor t2 = Tensor::from_storage(w2, {4}, {1}, 0, DType::f32);
  CHECK(may_overlap(t1, t2));
  CHECK_FALSE(may_overlap(t1.narrow(0, 0, 4), t2));
}

TEST_CASE("core: printing", "[core][print]") {
  const Tensor a = Tensor::arange(6, DType::f32).reshape({2, 3});
  const std::string s = a.str();
  INFO(s);
  CHECK(s.find("shape=[2, 3]") != std::string::npos);
  CHECK(s.find("strides=[3, 1]") != std::string::npos);
  CHECK(s.find("offset=0") != std::string::npos);
  CHECK(s.find("dtype=f32") != std::string::npos);
  CHECK(s.find("device=cpu") != std::string::npos);
  CHECK(s.find("[[0, 1, 2],\n [3, 4, 5]]") != std::string::npos);
  const std::string f = a.flip(1).select(0, 1).str();
  INFO(f);
  CHECK(f.find("strides=[-1], offset=5") != std::string::npos);
  CHECK(f.find("[5, 4, 3]") != std::string::npos);
  const std::string big = Tensor::arange(100, DType::f64).str(4);
  INFO(big);
  CHECK(big.find("[0, 1, 2, 3, ...]") != std::string::npos);
  std::ostringstream os;
  os << Tensor::full({}, 2.5, DType::bf16);
  CHECK(os.str().find("shape=[]") != std::string::npos);
  CHECK(os.str().find("dtype=bf16") != std::string::npos);
  CHECK(os.str().find("\n2.5") != std::string::npos);
  CHECK(Tensor().str() == "Tensor(undefined)");
}

TEST_CASE("core: shape helpers and devices", "[core][shape]") {
  CHECK(strata::shape_str({}) == "[]");
  CHECK(strata::shape_str({2, 3, 4}) == "[2, 3, 4]");
  CHECK(strata::shape_numel({}) == 1);
  CHECK(strata::shape_numel({2, 0, 5}) == 0);
  CHECK(strata::shape_numel({2, 3, 4}) == 24);
  CHECK(strata::broadcast_shapes({3, 1, 5}, {4, 1}, "op") == Shape{3, 4, 5});
  CHECK(strata::broadcast_shapes({}, {2, 3}, "op") == Shape{2, 3});
  CHECK(strata::broadcast_shapes({0, 1}, {1, 7}, "op") == Shape{0, 7});
  CORE_REQUIRE_ERROR(strata::broadcast_shapes({3, 2}, {4, 2}, "myop"), "myop", "[3, 2]", "[4, 2]");
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda") == Device::cuda(0));
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
  CHECK(Device::cuda(2).str() == "cuda:2");
  CHECK(Device::cpu().str() == "cpu");
  CORE_REQUIRE_ERROR(Device::parse("gpu"), "Device::parse", "'gpu'");
  CORE_REQUIRE_ERROR(Device::parse("cuda:x"), "Device::parse", "'cuda:x'");
  CORE_REQUIRE_ERROR(Device::parse("cuda:-1"), "Device::parse", "'cuda:-1'");
  CORE_REQUIRE_ERROR(Device::parse("cuda:99999999999"), "Device::parse");
  const Tensor a = Tensor::zeros({2, 3, 4});
  CHECK(a.size(-1) == 4);
  CHECK(a.stride(-3) == 12);
  CHECK(a.wrap_dim(-2, "x") == 1);
  CHECK(a.is_contiguous());
  CHECK(a.unsqueeze(1).is_contiguous());
  CHECK(a.unsqueeze(3).is_contiguous());
  CHECK_FALSE(a.transpose(0, 1).is_contiguous());
  CHECK(a.narrow(0, 1, 1).is_contiguous());
  CHECK_FALSE(a.narrow(2, 1, 2).is_contiguous());
}

TEST_CASE("core: large host blocks are kept for the next allocation of their size",
          "[core][storage][host_cache]") {
  using strata::detail::host_cache_stats;
  const std::size_t big = strata::detail::kHostCacheMinBytes + 4096;
  if (host_cache_stats().max_cached_bytes < 4 * big) return;  // a tiny machine: nothing kept
  void* first = nullptr;
  {
    auto s = Storage::allocate(big, Device::cpu());
    first = s->data();
    std::memset(first, 0x5a, big);
  }
  const auto before = host_cache_stats();
#if defined(__SANITIZE_ADDRESS__)
  // Off under AddressSanitizer, so that a use after free is still caught.
  CHECK(before.cached_bytes == 0);
#else
  CHECK(before.cached_bytes >= big);
  {
    auto s = Storage::allocate(big, Device::cpu());
    CHECK(s->data() == first);  // the same block again, no system call
    CHECK(reinterpret_cast<std::uintptr_t>(s->data()) % 64 == 0);
    CHECK(host_cache_stats().hits == before.hits + 1);
    auto other = Storage::allocate(big + 64, Device::cpu());  // exact sizes only
    CHECK(other->data() != first);
  }
  // Small blocks stay with malloc; trim hands everything back.
  { auto small = Storage::allocate(1024, Device::cpu()); }
  CHECK(strata::detail::host_cache_trim() >= big);
  CHECK(host_cache_stats().cached_bytes == 0);
#endif
}
