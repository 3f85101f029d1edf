// Eight host threads dispatch at once, each on a CUDA stream of its own,
// different problems (attention with GQA, causal and a mask; a strided add;
// rms_norm; a linear through cuBLAS): every result is bit-identical to the
// same call made serially on the default stream. The registry, the per-thread
// cuBLAS handles, the pool and the kernels may run side by side.
#include <cstdint>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "strata/strata.hpp"

namespace strata::cuda {
// Defined in backends/cuda/cuda_runtime.cu (testing hooks, not public API).
void* stream_create_for_test();
void stream_sync_for_test(void* s);
void stream_destroy_for_test(void* s);
}  // namespace strata::cuda

using namespace strata;

namespace {

struct Problem {
  Tensor q, k, v, mask, x, w, b, g;
  Causal causal = Causal::none;
};

Problem make_problem(int t) {
  const Device dev = Device::cuda(0);
  const std::uint64_t seed = 100 + 10 * static_cast<std::uint64_t>(t);
  const std::int64_t M = 17 + 23 * t, N = 64 + 41 * t, d = t % 2 ? 64 : 40;
  Problem p;
  p.q = Tensor::randn({2, 4, M, d}, seed, DType::f32, dev);
  p.k = Tensor::randn({2, 2, N, d}, seed + 1, DType::f32, dev);
  p.v = Tensor::randn({2, 2, N, 32}, seed + 2, DType::f32, dev)
            .transpose(2, 3)
            .contiguous()
            .transpose(2, 3);  // column-major v
  if (t % 3 == 0) p.mask = Tensor::rand({M, N}, seed + 3, DType::boolean, dev);
  p.causal = t % 2 ? Causal::bottom_right : Causal::none;
  p.x = Tensor::randn({3, 40 + t, 96}, seed + 4, DType::f32, dev);
  p.w = Tensor::randn({80, 96}, seed + 5, DType::f32, dev);
  p.b = Tensor::randn({80}, seed + 6, DType::f32, dev);
  p.g = Tensor::randn({96}, seed + 7, DType::f32, dev);
  return p;
}

// Every result of one problem, on `stream` (null: the default stream), on the host.
std::vector<std::vector<float>> run(const Problem& p, void* stream) {
  AttentionOptions ao;
  ao.mask = p.mask;
  ao.causal = p.causal;
  ao.stream = stream;
  OpOptions oo;
  oo.stream = stream;
  MatmulOptions mo;
  mo.stream = stream;
  const Tensor att = softmax_attention(p.q, p.k, p.v, ao);
  const Tensor sum = add(p.x, p.x.flip(1), oo);
  const Tensor nrm = rms_norm(p.x, p.g, 1e-6, oo);
  const Tensor lin = linear(nrm, p.w, p.b, mo);
  if (stream) cuda::stream_sync_for_test(stream);
  return {att.to_vector<float>(), sum.to_vector<float>(), nrm.to_vector<float>(),
          lin.to_vector<float>()};
}

}  // namespace

TEST_CASE("cuda: 8 threads on 8 streams give the serial results bit for bit", "[concurrency]") {
  constexpr int kThreads = 8;
  std::vector<Problem> problems;
  std::vector<std::vector<std::vector<float>>> want;
  for (int t = 0; t < kThreads; ++t) {
    problems.push_back(make_problem(t));
    want.push_back(run(problems.back(), nullptr));
  }
  for (int round = 0; round < 3; ++round) {
    std::vector<std::vector<std::vector<float>>> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        void* s = cuda::stream_create_for_test();
        got[t] = run(problems[t], s);
        cuda::stream_destroy_for_test(s);
      });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      INFO("round " << round << " thread " << t);
      REQUIRE(got[t].size() == want[t].size());
      for (std::size_t r = 0; r < want[t].size(); ++r) {
        INFO("result " << r);
        CHECK(got[t][r] == want[t][r]);
      }
    }
  }
}
