// Any number of threads may call softmax_attention at once (the registry is
// read-only after its one-time fill; kernels share nothing mutable). Eight
// std::threads run eight different problems at the same time, several
// rounds, on the cpu and reference backends, and every result must be
// bit-identical to the same call made serially. scripts/tsan.sh runs this
// under ThreadSanitizer.
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "concurrency_util.hpp"
#include "strata/attention.hpp"

using namespace strata;
using concurrency_test::bit_identical;

namespace {

struct Problem {
  Tensor q, k, v;
  AttentionOptions opt;
};

// Eight different problems: sizes, GQA, causal, windows, a bool mask,
// strided views, f32 and f64.
std::vector<Problem> problems(const std::string& backend) {
  std::vector<Problem> ps;
  for (int i = 0; i < 8; ++i) {
    const std::int64_t M = 17 + 9 * i, N = 40 + 13 * i, d = 8 + 4 * (i % 3), dv = 16 - i;
    const std::int64_t hq = 2 + 2 * (i % 2), hkv = i % 2 ? 2 : hq;
    const DType dt = i % 4 == 3 ? DType::f64 : DType::f32;
    const auto seed = static_cast<std::uint64_t>(100 + 3 * i);
    Problem p;
    p.q = Tensor::randn({2, hq, M, d}, seed, dt);
    // Every other k is a transposed (column-major) view.
    p.k = i % 2 ? Tensor::randn({2, hkv, d, N}, seed + 1, dt).transpose(-1, -2)
                : Tensor::randn({2, hkv, N, d}, seed + 1, dt);
    p.v = Tensor::randn({2, hkv, N, dv}, seed + 2, dt);
    if (i % 3 == 1) p.opt.causal = Causal::bottom_right;
    if (i % 4 == 2) p.opt.window = std::pair<std::int64_t, std::int64_t>{7, 3};
    if (i == 5) p.opt.mask = Tensor::rand({M, N}, seed + 3).to(DType::boolean);
    p.opt.backend = backend;
    ps.push_back(std::move(p));
  }
  return ps;
}

void run_concurrently(const std::string& backend) {
  const std::vector<Problem> ps = problems(backend);
  concurrency_test::run_concurrently(static_cast<int>(ps.size()), 20, [&](int t) {
    return std::vector<Tensor>{softmax_attention(ps[t].q, ps[t].k, ps[t].v, ps[t].opt)};
  });
}

}  // namespace

TEST_CASE("concurrency: 8 threads at once, bit-identical to serial (cpu)", "[concurrency]") {
  run_concurrently("cpu");
}

TEST_CASE("concurrency: 8 threads at once, bit-identical to serial (reference)", "[concurrency]") {
  run_concurrently("reference");
}

TEST_CASE("concurrency: cpu and reference calls interleaved across threads", "[concurrency]") {
  // Both backends at the same time, and the first call of each problem made
  // from the threads (no serial warm-up of that exact call).
  const std::vector<Problem> cpu = problems("cpu"), ref = problems("reference");
  std::vector<Tensor> got(16);
  std::vector<std::string> errors(16);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      const Problem& p = t % 2 ? ref[t / 2] : cpu[t / 2];
      try {
        got[t] = softmax_attention(p.q, p.k, p.v, p.opt);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (std::size_t t = 0; t < 16; ++t) {
    INFO("thread " << t);
    REQUIRE(errors[t].empty());
    const Problem& p = t % 2 ? ref[t / 2] : cpu[t / 2];
    CHECK(bit_identical(got[t], softmax_attention(p.q, p.k, p.v, p.opt)));
  }
}
