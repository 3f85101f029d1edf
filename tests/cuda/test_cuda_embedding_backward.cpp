// cuda embedding_backward on calls past the scan (its sort by id,
// rows_embedding_backward.cu) against the reference backend: hot ids that
// repeat hundreds of times beside ids seen once, both id dtypes, strided ids,
// grad and table_grad views, sums onto existing gradients, the same bits on
// a second run (no atomics), and a bad id named before anything is written.
// The scan (tiny calls) and the sort on small shapes are the runner's
// (op_catalog_rows.cpp).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "strata/embedding.hpp"
#include "strata/tensor.hpp"
#include "test_core_util.hpp"

using namespace strata;
using cuda_test::kCuda;
using cuda_test::kGpu;
using cuda_test::kRef;

namespace {

// n ids below vocab: every third one of five hot ids (the first and last
// rows among them), the rest drawn uniformly.
std::vector<std::int64_t> skewed_ids(std::int64_t n, std::int64_t vocab, std::uint64_t seed) {
  const std::int64_t hot[] = {0, 17, vocab / 2, vocab - 1, 17};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> any(0, vocab - 1);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    ids[static_cast<std::size_t>(i)] = i % 3 == 0 ? hot[(i / 3) % 5] : any(rng);
  return ids;
}

Tensor ids_tensor(const std::vector<std::int64_t>& v, const Shape& s, DType dt) {
  if (dt == DType::i64) return Tensor::from_vector<std::int64_t>(v, s);
  return Tensor::from_vector<std::int32_t>(std::vector<std::int32_t>(v.begin(), v.end()), s);
}

// f32 sums of a few hundred unit-normal rows against f64 ones; one f32
// rounding of such a sum; two ulps of a 16-bit dtype.
double atol_of(DType dt) { return dt == DType::f32 ? 2e-4 : dt == DType::f64 ? 1e-10 : 0.25; }

}  // namespace

TEST_CASE("cuda embedding_backward, large vocabulary: the reference's sums, the same bits twice",
          "[cuda][embedding]") {
  const std::int64_t V = 50304, D = 40, N = 6000;
  for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (const DType id_dt : {DType::i32, DType::i64}) {
      INFO("dtype " << dtype_name(dt) << ", ids " << dtype_name(id_dt));
      const Tensor ids = ids_tensor(skewed_ids(N, V, 7), {N}, id_dt);
      const Tensor grad = Tensor::randn({N, D}, 11, dt);
      const Tensor start = Tensor::randn({V, D}, 12, dt);  // gradients already there
      const Tensor want = start.clone();
      embedding_backward_out(want, grad, ids, kRef);
      const Tensor ids_d = ids.to(kGpu), grad_d = grad.to(kGpu);
      const Tensor got = start.to(kGpu), again = start.to(kGpu);
      embedding_backward_out(got, grad_d, ids_d, kCuda);
      embedding_backward_out(again, grad_d, ids_d, kCuda);
      cuda_test::require_close(got, want, atol_of(dt), cuda_test::tol(dt));
      const std::vector<double> a = got.to(Device::cpu()).to_vector<double>();
      const std::vector<double> b = again.to(Device::cpu()).to_vector<double>();
      REQUIRE(a == b);
    }
}

TEST_CASE("cuda embedding_backward, large vocabulary: strided ids, grad and table_grad views",
          "[cuda][embedding]") {
  const std::int64_t V = 3000, D = 24;
  for (const DType dt : {DType::f32, DType::bf16}) {
    INFO("dtype " << dtype_name(dt));
    // ids every second element of a [2N] buffer; grad [N, D] the transpose
    // of a [D, N] one (a column stride of N); table_grad the second half of
    // [V, 2D]. The kernel sees these strides (none is copied first).
    const std::int64_t N = 2048;
    const Tensor ids_base = ids_tensor(skewed_ids(2 * N, V, 5), {2 * N}, DType::i64);
    const Tensor grad_base = Tensor::randn({D, N}, 21, dt);
    const Tensor base = Tensor::randn({V, 2 * D}, 22, dt);
    const Tensor want = base.clone();
    embedding_backward_out(want.narrow(1, D, D), grad_base.transpose(0, 1),
                           ids_base.slice(0, 0, 2 * N, 2), kRef);
    const Tensor got = base.to(kGpu);
    embedding_backward_out(got.narrow(1, D, D), grad_base.to(kGpu).transpose(0, 1),
                           ids_base.to(kGpu).slice(0, 0, 2 * N, 2), kCuda);
    cuda_test::require_close(got, want, atol_of(dt), cuda_test::tol(dt));
  }
}

TEST_CASE("cuda embedding_backward, sorted: a bad id is named, table_grad untouched",
          "[cuda][embedding]") {
  const std::int64_t V = 2000, D = 8, N = 100;  // V x N past the scan
  std::vector<std::int32_t> v(N);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i * 19);
  v[37] = 2000;
  v[60] = -1;
  const Tensor ids = Tensor::from_vector<std::int32_t>(v, {N}).to(kGpu);
  const Tensor grad = Tensor::randn({N, D}, 3, DType::f32).to(kGpu);
  const Tensor tg = Tensor::full({V, D}, 1.5, DType::f32).to(kGpu);
  const std::string msg =
      core_test::error_of([&] { embedding_backward_out(tg, grad, ids, kCuda); });
  INFO(msg);
  CHECK(msg.find("embedding_backward: ") == 0);
  CHECK(msg.find("ids holds 2000 at index 37, outside [0, 2000)") != std::string::npos);
  for (double x : tg.to(Device::cpu()).to_vector<double>()) REQUIRE(x == 1.5);
}
