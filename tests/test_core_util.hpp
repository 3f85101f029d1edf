#pragma once
// Helpers shared by the core tests: error-message checks that work with
// Catch2 2.13 and 3.x, a seeded RNG, and a fake device runtime.
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/device_runtime.hpp"
#include "strata/error.hpp"
#include "strata/tensor.hpp"

namespace core_test {

// The strata::Error message `f` throws, or "<no error>".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Checks that `f` throws strata::Error whose message contains every part.
#define CORE_REQUIRE_ERROR(expr, ...)                                             \
  do {                                                                            \
    const std::string core_msg_ = ::core_test::error_of([&] { (void)(expr); });   \
    INFO("expression: " #expr);                                                   \
    INFO("message: " << core_msg_);                                               \
    REQUIRE(core_msg_ != "<no error>");                                           \
    for (const std::string& core_part_ : std::vector<std::string>{__VA_ARGS__}) { \
      INFO("expected part: " << core_part_);                                      \
      CHECK(core_msg_.find(core_part_) != std::string::npos);                     \
    }                                                                             \
  } while (0)

// Every multi-index of `shape` in row-major order. g++ 13 (the GPU machine's)
// reports -Wfree-nonheap-object inside std::vector's deallocate when this is
// inlined into the fake runtime's copy; the vectors here are plain heap
// vectors, so that is a false positive, silenced for it and that caller only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif
inline std::vector<std::vector<std::int64_t>> all_indices(const strata::Shape& shape) {
  std::vector<std::vector<std::int64_t>> out;
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  if (n == 0) return out;
  std::vector<std::int64_t> idx(shape.size(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    out.push_back(idx);
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// A stand-in for a GPU runtime: "device" memory is host memory it tracks
// itself, and its strided copy is its own naive loop (not core's). Installed
// as the cuda runtime only when no real one is built, so these tests exercise
// core's cross-device paths on any machine.
class FakeRuntime final : public strata::DeviceRuntime {
 public:
  strata::DeviceType type() const override { return strata::DeviceType::cuda; }
  int device_count() const override { return retired ? 0 : 2; }
  std::string unavailable_reason() const override {
    return retired ? "fake test runtime retired" : "";
  }
  std::string describe(int index) const override { return "fake " + std::to_string(index); }
  void* allocate(std::size_t nbytes, int index) override {
    REQUIRE((index == 0 || index == 1));
    ++allocations;
    return ::operator new(nbytes == 0 ? 1 : nbytes);
  }
  void deallocate(void* p, int) noexcept override {
    ++deallocations;
    ::operator delete(p);
  }
  void copy_bytes(void* dst, strata::Device dd, const void* src, strata::Device sd,
                  std::size_t nbytes) override {
    REQUIRE((!dd.is_cpu() || !sd.is_cpu()));
    ++byte_copies;
    std::memmove(dst, src, nbytes);
  }
  void copy_strided(const strata::StridedLayout& dst, const strata::StridedLayout& src,
                    strata::DType dt, strata::Device dev) override {
    REQUIRE_FALSE(dev.is_cpu());
    REQUIRE(dst.rank == src.rank);
    ++strided_copies;
    const std::size_t isz = strata::itemsize(dt);
    strata::Shape shape(dst.shape, dst.shape + dst.rank);
    for (const auto& idx : all_indices(shape)) {
      std::int64_t so = 0, d_o = 0;
      for (int d = 0; d < dst.rank; ++d) {
        so += idx[d] * src.strides[d];
        d_o += idx[d] * dst.strides[d];
      }
      std::memcpy(static_cast<char*>(dst.data) + d_o * static_cast<std::int64_t>(isz),
                  static_cast<const char*>(src.data) + so * static_cast<std::int64_t>(isz), isz);
    }
  }
  void synchronize(int) override {}

  bool retired = false;
  int allocations = 0, deallocations = 0, byte_copies = 0, strided_copies = 0;
};
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// The fake runtime, installed on first call, or nullptr when a real cuda
// runtime is built in (then the real device is used where it is available).
FakeRuntime* fake_runtime();

// Makes a second device available for one test: the real cuda:0 when a
// GPU is usable, else the fake runtime (retired again when the scope ends so
// other tests in the binary see no device). When a real cuda runtime is
// built in but has no device, the fake stands in for it during the scope
// and the real one is put back afterwards. Declare the scope before any
// tensor it makes, so they are freed while it is installed.
class DeviceScope {
 public:
  DeviceScope() {
    fake_ = fake_runtime();
    if (fake_ == nullptr) {
      strata::DeviceRuntime* rt = strata::device_runtime(strata::DeviceType::cuda);
      if (rt && rt->device_count() > 0) {
        device = strata::Device::cuda(0);
        return;
      }
      auto stand_in = std::make_unique<FakeRuntime>();
      fake_ = stand_in.get();
      real_ = strata::install_device_runtime(std::move(stand_in));
    }
    fake_->retired = false;
    device = strata::Device::cuda(0);
  }
  ~DeviceScope() {
    if (real_) {
      strata::install_device_runtime(std::move(real_));
    } else if (fake_) {
      fake_->retired = true;
    }
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  std::optional<strata::Device> device;
  bool is_fake() const { return fake_ != nullptr; }
  FakeRuntime* fake() const { return fake_; }

 private:
  FakeRuntime* fake_ = nullptr;
  std::unique_ptr<strata::DeviceRuntime> real_;  // put back when the scope ends
};

}  // namespace core_test
