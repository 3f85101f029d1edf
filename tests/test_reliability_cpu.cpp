// The cpu backend's own memory (packed copies, per-thread scratch) is
// allocated before any OpenMP region, and a workspace that cannot be had is
// a strata::Error naming the op and the bytes, never a std::bad_alloc (which,
// inside a region, would terminate the process). Each case then shows the
// process carries on: the next call works and agrees with the reference.
#include <cmath>
#include <cstdint>
#include <string>

#include "address_limit.hpp"
#include "catch.hpp"
#include "ops_test_util.hpp"
#include "strata/attention.hpp"
#include "strata/matmul.hpp"
#include "strata/reduce.hpp"

using namespace strata;

namespace {

// The message of the strata::Error `f` throws; "" when it returns. Any
// other exception type fails the test (Catch reports it).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

using ops_test::on;

// Small sums, softmaxes and a matmul on cpu agree with the reference.
void next_calls_work() {
  const Tensor x = Tensor::randn({5, 300}, 11).transpose(0, 1);  // strided rows: scratch
  const auto s = sum(x, -1, false, on("cpu")).to_vector<double>();
  const auto sr = sum(x, -1, false, on("reference")).to_vector<double>();
  REQUIRE(s.size() == sr.size());
  for (std::size_t i = 0; i < s.size(); ++i) CHECK(std::abs(s[i] - sr[i]) < 1e-5);
  const auto p = softmax(x, -1, on("cpu")).to_vector<double>();
  const auto pr = softmax(x, -1, on("reference")).to_vector<double>();
  for (std::size_t i = 0; i < p.size(); ++i) CHECK(std::abs(p[i] - pr[i]) < 1e-6);
  MatmulOptions mc, mr;
  mc.backend = "cpu";
  mr.backend = "reference";
  const Tensor a = Tensor::randn({7, 9}, 12).transpose(0, 1), b = Tensor::randn({7, 3}, 13);
  const auto m = matmul(a, b, mc).to_vector<double>();
  const auto ref = matmul(a, b, mr).to_vector<double>();
  for (std::size_t i = 0; i < m.size(); ++i) CHECK(std::abs(m[i] - ref[i]) < 1e-4);
}

// Options of the ops that take their own options struct, on the cpu backend.
template <class Options>
Options on_cpu() {
  Options o;
  o.backend = "cpu";
  return o;
}

// One element, expanded (stride 0) to `shape`: any size costs no memory.
Tensor broadcast_one(const Shape& shape) {
  return Tensor::full(Shape(shape.size(), 1), 0.5).expand(shape);
}

}  // namespace

TEST_CASE("cpu: a row scratch larger than memory is an Error naming op and bytes",
          "[reliability][cpu]") {
  // sum over rows of 2^40 elements read with stride 0: the row is gathered
  // into per-thread scratch of 2^40 f32 (4 TiB) per thread; the output is
  // two floats.
  const std::int64_t n = std::int64_t{1} << 40;
  const std::string e = error_of([&] { (void)sum(broadcast_one({2, n}), -1, false, on("cpu")); });
  INFO(e);
  CHECK(e.rfind("sum: the cpu backend needs ", 0) == 0);
  CHECK(e.find("per-thread row scratch") != std::string::npos);
  CHECK(e.find("available") != std::string::npos);
  // The bytes are n * 4 * threads: a multiple of 4 TiB.
  const std::uint64_t bytes =
      std::stoull(e.substr(std::string("sum: the cpu backend needs ").size()));
  CHECK(bytes % (std::uint64_t{4} << 40) == 0);
  CHECK(bytes > 0);

  // The same for the other row ops that gather (max, softmax's output is
  // as large as its input, so it cannot be provoked this way).
  const std::string m = error_of([&] { (void)max(broadcast_one({3, n}), -1, false, on("cpu")); });
  CHECK(m.rfind("max: the cpu backend needs ", 0) == 0);
  // Sizes whose bytes overflow 64 bits.
  const std::string o = error_of([&] {
    (void)sum(broadcast_one({2, std::int64_t{1} << 62}), -1, false, on("cpu"));
  });
  INFO(o);
  CHECK(o.rfind("sum: ", 0) == 0);
  CHECK(o.find("more than 2^64 bytes") != std::string::npos);
  next_calls_work();
}

TEST_CASE("cpu: a matmul packing larger than memory is an Error naming op and bytes",
          "[reliability][cpu]") {
  // a [2^20, 2^20] read with strides (0, 0) is packed into a row-major f32
  // copy first: 4 TiB; b is [2^20, 1], the output [2^20, 1] (4 MB).
  const std::int64_t n = std::int64_t{1} << 20;
  const std::string e = error_of([&] {
    (void)matmul(broadcast_one({n, n}), Tensor::full({n, 1}, 1.0), on_cpu<MatmulOptions>());
  });
  INFO(e);
  CHECK(e.rfind("matmul: the cpu backend needs 4398046511104 bytes (4194304 MiB) for a packed "
                "copy of an input, but only ",
                0) == 0);
  next_calls_work();
}

TEST_CASE("cpu: an attention workspace larger than memory is an Error naming op and bytes",
          "[reliability][cpu]") {
  // Head dim 2^32, q and k one element read with stride 0, dv = 1: the
  // per-thread workspace holds key blocks of d columns (terabytes); the
  // output is one float.
  const std::int64_t d = std::int64_t{1} << 32;
  const AttentionOptions opt = on_cpu<AttentionOptions>();
  const std::string e = error_of([&] {
    (void)softmax_attention(broadcast_one({3, d}), broadcast_one({5, d}), broadcast_one({5, 1}),
                            opt);
  });
  INFO(e);
  CHECK(e.rfind("softmax_attention: the cpu backend needs ", 0) == 0);
  CHECK(e.find("per-thread workspaces") != std::string::npos);
  next_calls_work();
  const Tensor q = Tensor::randn({2, 7, 16}, 21), k = Tensor::randn({2, 9, 16}, 22),
               v = Tensor::randn({2, 9, 4}, 23);
  AttentionOptions ref;
  ref.backend = "reference";
  const auto got = softmax_attention(q, k, v, opt).to_vector<double>();
  const auto want = softmax_attention(q, k, v, ref).to_vector<double>();
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) < 1e-5);
}

TEST_CASE("cpu: a workspace allocation that fails is an Error, not std::bad_alloc",
          "[reliability][cpu]") {
#ifdef STRATA_TEST_NO_RLIMIT
  WARN("skipped under a sanitizer (RLIMIT_AS cannot be lowered meaningfully)");
#else
  // An address-space limit 256 MB above what the process maps now: a
  // 512 MB-per-thread row scratch fails to allocate even where the memory
  // check (which reads what the system has) lets it through.
  const std::string e = test::with_address_limit(256, [] {
    return error_of([] {
      (void)sum(broadcast_one({2, std::int64_t{1} << 27}), -1, false, on("cpu"));
    });
  });
  INFO(e);
  CHECK(e.rfind("sum: the cpu backend needs ", 0) == 0);
  CHECK((e.find("the allocation failed") != std::string::npos ||
         e.find("available") != std::string::npos));
  next_calls_work();
#endif
}
