// Copies between every pair of layouts (and devices where one is usable,
// else the fake runtime), checked element by element through item(), with
// the destination storage outside the view checked untouched.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
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

enum class Layout { contiguous, transposed, sliced, flipped, mixed, broadcast };
// Layout's values in order.
constexpr const char* kLayoutNames[] = {"contiguous", "transposed", "sliced",
                                        "flipped",    "mixed",      "broadcast"};
const char* name(Layout l) { return kLayoutNames[static_cast<int>(l)]; }

constexpr double kSentinel = -99.0;

// A tensor of logical `shape` [A, B, C] laid out as `l` inside a storage
// pre-filled with kSentinel; `base` receives the non-broadcast tensor whose
// elements are the distinct storage cells.
Tensor make(Layout l, const Shape& shape, DType dt, Device dev, Tensor* base) {
  const std::int64_t A = shape[0], B = shape[1], C = shape[2];
  Tensor t;
  switch (l) {
    case Layout::contiguous:
      t = Tensor::full(shape, kSentinel, dt, dev);
      break;
    case Layout::transposed:  // C-major storage
      t = Tensor::full({C, A, B}, kSentinel, dt, dev).permute({1, 2, 0});
      break;
    case Layout::sliced:  // every other element, with an offset, plus a trailing gap
      t = Tensor::full({A + 1, 2 * B + 1, C + 2}, kSentinel, dt, dev)
              .slice(0, 1, A + 1)
              .slice(1, 1, 2 * B + 1, 2)
              .narrow(2, 1, C);
      break;
    case Layout::flipped:
      t = Tensor::full(shape, kSentinel, dt, dev).flip(0).flip(2);
      break;
    case Layout::mixed:  // negative step slice of a transposed tensor
      t = Tensor::full({B, 2 * C, A}, kSentinel, dt, dev)
              .permute({2, 0, 1})
              .slice(2, strata::Slice{{}, {}, -2});
      break;
    case Layout::broadcast:  // [1, B, 1] expanded: stride 0 in two dims
      t = Tensor::full({1, B, 1}, kSentinel, dt, dev);
      *base = t;
      return t.expand(shape);
  }
  *base = t;
  return t;
}

// Distinct values each dtype holds exactly.
double value_for(std::int64_t k, DType dt) {
  if (dt == DType::boolean) return static_cast<double>(k % 2);
  return static_cast<double>((k * 37) % 101) - 50.0;  // in f16/bf16 range, exact
}

// Counts storage cells still holding the sentinel.
std::int64_t sentinels(const Tensor& t) {
  const auto isz = static_cast<std::int64_t>(strata::itemsize(t.dtype()));
  const auto cells = static_cast<std::int64_t>(t.storage()->nbytes()) / isz;
  const Tensor all = Tensor::from_storage(t.storage(), {cells}, {1}, 0, t.dtype());
  std::int64_t n = 0;
  for (double v : all.to_vector<double>()) n += v == kSentinel;
  return n;
}

void check_copy(Layout sl, Layout dl, DType dt, Device sdev, Device ddev, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Shape shape{static_cast<std::int64_t>(rng() % 3 + 1),
                    static_cast<std::int64_t>(rng() % 4 + 2),
                    static_cast<std::int64_t>(rng() % 5 + 1)};
  INFO("src " << name(sl) << " on " << sdev.str() << ", dst " << name(dl) << " on " << ddev.str()
              << ", dtype " << strata::dtype_name(dt) << ", shape " << strata::shape_str(shape)
              << ", seed " << seed);
  Tensor sbase, dbase;
  const Tensor src = make(sl, shape, dt, sdev, &sbase);
  const Tensor dst = make(dl, shape, dt, ddev, &dbase);
  // Distinct values in the source's own cells, set one by one.
  std::int64_t k = static_cast<std::int64_t>(rng() % 50);
  for (const auto& idx : core_test::all_indices(sbase.shape()))
    sbase.set_item(idx, value_for(k++, dt));
  std::vector<double> expected;
  for (const auto& idx : core_test::all_indices(shape)) expected.push_back(src.item(idx));
  const std::int64_t before = dt == DType::boolean ? 0 : sentinels(dst);
  dst.copy_from(src);
  std::size_t i = 0;
  for (const auto& idx : core_test::all_indices(shape)) {
    INFO("index " << strata::shape_str(idx));
    REQUIRE(dst.item(idx) == expected[i++]);
  }
  // A bool sentinel reads back as 1 like half the values, so it cannot be counted.
  if (dt != DType::boolean) REQUIRE(sentinels(dst) == before - dst.numel());
}

const Layout kAll[] = {Layout::contiguous, Layout::transposed, Layout::sliced,
                       Layout::flipped,    Layout::mixed,      Layout::broadcast};

}  // namespace

TEST_CASE("core: copy_from between every pair of host layouts", "[core][copy]") {
  std::uint64_t seed = 100;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::boolean}) {
    for (Layout s : kAll) {
      for (Layout d : kAll) {
        if (d == Layout::broadcast) continue;  // a broadcast destination aliases itself
        check_copy(s, d, dt, Device::cpu(), Device::cpu(), seed++);
      }
    }
  }
}

TEST_CASE("core: copy_from across devices and within one", "[core][copy][device]") {
  core_test::DeviceScope scope;
  REQUIRE(scope.device);  // a real GPU, or the fake runtime standing in for one
  const Device dev = *scope.device;
  const Device cpu = Device::cpu();
  std::uint64_t seed = 500;
  for (DType dt : {DType::f32, DType::f16}) {
    for (Layout s : kAll) {
      for (Layout d : kAll) {
        if (d == Layout::broadcast) continue;
        check_copy(s, d, dt, cpu, dev, seed++);
        check_copy(s, d, dt, dev, cpu, seed++);
        check_copy(s, d, dt, dev, dev, seed++);
      }
    }
  }
  if (core_test::FakeRuntime* fake = scope.fake()) {
    // Same-device strided copies must go through the runtime's strided copy,
    // crossing copies through contiguous byte copies only.
    const int strided = fake->strided_copies, bytes = fake->byte_copies;
    const Tensor a = Tensor::rand({3, 4}, 1, DType::f32, dev);
    const Tensor b = Tensor::zeros({4, 3}, DType::f32, dev).transpose(0, 1);
    b.copy_from(a);
    CHECK(fake->strided_copies == strided + 1);
    CHECK(b.to(cpu).to_vector<float>() == a.to(cpu).to_vector<float>());
    CHECK(fake->byte_copies > bytes);
  }
}

TEST_CASE("core: device tensors: factories, element access, printing", "[core][copy][device]") {
  core_test::DeviceScope scope;
  REQUIRE(scope.device);  // a real GPU, or the fake runtime standing in for one
  const Device dev = *scope.device;
  const Tensor r = Tensor::randn({5, 7}, 42, DType::f32, dev);
  CHECK(r.device() == dev);
  CHECK(r.to_vector<float>() == Tensor::randn({5, 7}, 42).to_vector<float>());
  const Tensor z = Tensor::full({2, 3}, 2.5, DType::f64, dev);
  CHECK(z.to_vector<double>() == std::vector<double>(6, 2.5));
  z.set_item({1, -1}, 7.0);
  CHECK(z.item({1, 2}) == 7.0);
  z.transpose(0, 1).slice(0, 0, 3, 2).fill(-1.0);
  CHECK(z.to_vector<double>() == std::vector<double>{-1, 2.5, -1, -1, 2.5, -1});
  CHECK(z.str().find("device=" + dev.str()) != std::string::npos);
  CHECK(z.str().find("[-1, 2.5, -1]") != std::string::npos);
  const Tensor h = Tensor::arange(6, DType::f32).reshape({2, 3});
  CHECK(h.to(dev).to(DType::f16).to(Device::cpu()).to_vector<float>() ==
        std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(h.to(dev).transpose(0, 1).contiguous().to_vector<float>() ==
        std::vector<float>{0, 3, 1, 4, 2, 5});
  const Tensor empty = Tensor::empty({0, 3}, DType::f32, dev);
  CHECK(empty.to(Device::cpu()).numel() == 0);
}

TEST_CASE("core: copy_from broadcasting, overlap and errors", "[core][copy]") {
  const Tensor dst = Tensor::zeros({2, 3, 4}, DType::f64);
  dst.copy_from(Tensor::arange(4, DType::f64));  // lower rank broadcasts
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t k = 0; k < 4; ++k) REQUIRE(dst.item({i, j, k}) == k);
  dst.copy_from(Tensor::full({}, 3.0, DType::f64));  // 0-d source
  CHECK(dst.to_vector<double>() == std::vector<double>(24, 3.0));

  // Overlapping shift: reads must see the values from before the copy.
  const Tensor a = Tensor::arange(8, DType::f32);
  a.slice(0, 1, 8).copy_from(a.slice(0, 0, 7));
  CHECK(a.to_vector<float>() == std::vector<float>{0, 0, 1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::arange(8, DType::f32);
  b.copy_from(b.flip(0));  // in-place reversal
  CHECK(b.to_vector<float>() == std::vector<float>{7, 6, 5, 4, 3, 2, 1, 0});
  const Tensor m = Tensor::arange(9, DType::f32).reshape({3, 3});
  m.copy_from(m.transpose(0, 1));  // in-place transpose
  CHECK(m.to_vector<float>() == std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8});
  m.copy_from(m);  // self copy is a no-op
  CHECK(m.item({0, 1}) == 3.0);

  CORE_REQUIRE_ERROR(dst.copy_from(Tensor::zeros({4}, DType::f32)), "Tensor::copy_from", "f32",
                     "f64");
  CORE_REQUIRE_ERROR(dst.copy_from(Tensor::zeros({3, 2}, DType::f64)), "Tensor::copy_from",
                     "[3, 2]", "[2, 3, 4]");
  CORE_REQUIRE_ERROR(Tensor().copy_from(dst), "Tensor::copy_from", "undefined");
  CORE_REQUIRE_ERROR(dst.copy_from(Tensor()), "Tensor::copy_from", "undefined");
}

TEST_CASE("core: contiguous, clone, to, fill and full", "[core][copy]") {
  const Tensor a = Tensor::arange(12, DType::f32).reshape({3, 4});
  CHECK(a.contiguous().storage() == a.storage());
  CHECK(a.clone().storage() != a.storage());
  CHECK(a.to(Device::cpu()).storage() == a.storage());
  CHECK(a.to(DType::f32).storage() == a.storage());
  const Tensor t = a.transpose(0, 1).contiguous();
  CHECK(t.is_contiguous());
  CHECK(t.strides() == Shape{3, 1});
  CHECK(t.to_vector<float>() == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  const Tensor h = a.flip(1).to(DType::f16);
  CHECK(h.dtype() == DType::f16);
  CHECK(h.is_contiguous());
  CHECK(h.item({0, 0}) == 3.0);
  CHECK(Tensor::full({3}, 0.1, DType::bf16).item({0}) ==
        static_cast<float>(strata::bfloat16(0.1f)));
  const Tensor bools = Tensor::arange(4, DType::f64).to(DType::boolean);
  CHECK(bools.to_vector<bool>() == std::vector<bool>{false, true, true, true});
  CHECK(bools.to(DType::f32).to_vector<float>() == std::vector<float>{0, 1, 1, 1});
  const Tensor g = Tensor::zeros({4, 5}, DType::f64);
  g.slice(1, 1, 5, 2).fill(2.0);
  CHECK(g.select(0, 3).to_vector<double>() == std::vector<double>{0, 2, 0, 2, 0});
  CHECK(Tensor::zeros({0}).numel() == 0);
  Tensor::zeros({0, 4}).fill(1.0);  // nothing to write, must not fail
  const std::vector<float> v{1.5f, -2.f, 3.f, 4.f, 5.f, 6.f};
  const Tensor fv = Tensor::from_vector(v, {2, 3});
  CHECK(fv.to_vector<float>() == v);
  CHECK(fv.data<float>()[4] == 5.f);
  CORE_REQUIRE_ERROR(fv.data<double>(), "Tensor::data", "f64", "f32");
  CORE_REQUIRE_ERROR(Tensor::from_vector(v, {4, 2}), "Tensor::from_vector", "6", "[4, 2]");
  const Tensor c = Tensor::arange(6, DType::f32).reshape({2, 3}).transpose(0, 1).reshape_copy({6});
  CHECK(c.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("core: ones in every dtype, on the host and a device", "[core][copy]") {
  // One, as each dtype's own bit pattern (written out here, not converted).
  struct Want {
    DType dt;
    std::uint64_t bits;
  };
  const Want wants[] = {{DType::f32, 0x3f800000u}, {DType::f64, 0x3ff0000000000000u},
                        {DType::f16, 0x3c00u},     {DType::bf16, 0x3f80u},
                        {DType::boolean, 1u},      {DType::i32, 1u},
                        {DType::i64, 1u}};
  core_test::DeviceScope scope;
  REQUIRE(scope.device);
  for (const Want& w : wants) {
    for (const Device dev : {Device::cpu(), *scope.device}) {
      INFO(strata::dtype_name(w.dt) << " on " << dev.str());
      const Tensor t = Tensor::ones({2, 3, 4}, w.dt, dev);
      CHECK(t.dtype() == w.dt);
      CHECK(t.device() == dev);
      CHECK(t.shape() == Shape{2, 3, 4});
      CHECK(t.is_contiguous());
      const Tensor host = t.to(Device::cpu());
      const std::size_t isz = strata::itemsize(w.dt);
      for (std::int64_t i = 0; i < t.numel(); ++i) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, static_cast<const char*>(host.data_ptr()) + i * isz, isz);
        REQUIRE(bits == w.bits);
      }
    }
  }
  CHECK(Tensor::ones({}).to_vector<float>() == std::vector<float>{1.f});  // 0-d
  CHECK(Tensor::ones({3, 0}).numel() == 0);
  CHECK(Tensor::ones({5}).dtype() == DType::f32);  // the defaults are zeros'
  CHECK(Tensor::ones({5}).device() == Device::cpu());
  CORE_REQUIRE_ERROR(Tensor::ones({2, -1}), "negative size -1", "[2, -1]");
}
