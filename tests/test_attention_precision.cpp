// AttentionOptions::precision on the host backends: reference and cpu have
// no tensor-core kernels and run highest whatever is asked, so every
// precision gives the same kernel and bit-identical results; the option's
// default is highest. (The cuda kernels that honour it are tested in
// tests/cuda/test_cuda_attention_tf32.cpp.)
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/attention.hpp"
#include "strata/registry.hpp"
#include "strata/tensor.hpp"

using namespace strata;

namespace {

bool host_backend_available(const std::string& name) {
  const BackendInfo* b = Registry::get().backend(name);
  return b != nullptr && b->compiled && b->available;
}

// Bitwise equality of two tensors' values (as f64, which every dtype here
// converts to exactly); NaN never appears in these cases.
void check_identical(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  REQUIRE(x.size() == y.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differ += x[i] != y[i];
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("attention precision: highest is the default", "[attention][precision]") {
  CHECK(AttentionOptions{}.precision == Precision::highest);
}

TEST_CASE("attention precision: reference and cpu ignore it", "[attention][precision]") {
  for (const std::string backend : {"reference", "cpu"}) {
    if (!host_backend_available(backend)) continue;
    for (DType dt : {DType::f32, DType::f64, DType::bf16}) {
      const Tensor q = Tensor::randn({2, 4, 37, 24}, 11, dt);
      const Tensor k = Tensor::randn({2, 2, 45, 24}, 12, dt);
      const Tensor v = Tensor::randn({2, 2, 45, 20}, 13, dt);
      AttentionOptions base;
      base.backend = backend;
      base.causal = Causal::bottom_right;
      base.window = std::make_pair<std::int64_t, std::int64_t>(30, -1);
      const AttentionResult want = softmax_attention_lse(q, k, v, base);
      const std::string want_kernel = softmax_attention_kernel(q, k, v, base);
      for (Precision p : {Precision::high, Precision::medium}) {
        AttentionOptions o = base;
        o.precision = p;
        INFO(backend << " " << dtype_name(dt) << " precision " << int(p));
        CHECK(softmax_attention_kernel(q, k, v, o) == want_kernel);
        const AttentionResult got = softmax_attention_lse(q, k, v, o);
        check_identical(got.out, want.out);
        check_identical(got.lse, want.lse);
      }
    }
  }
}
