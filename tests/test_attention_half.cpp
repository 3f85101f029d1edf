// f16 and bf16 attention on every host backend: the output in the input
// dtype, lse in f32, against the f64 reference of the same (rounded) inputs.
#include <cmath>
#include <string>

#include "catch.hpp"
#include "strata/attention.hpp"
#include "strata/elementwise.hpp"
#include "test_core_util.hpp"

using namespace strata;

TEST_CASE("attention: f16 and bf16 inputs on the host backends", "[attention][half]") {
  for (DType dt : {DType::f16, DType::bf16}) {
    // The inputs are rounded to dt once; the reference runs on exactly
    // those values in f64, so what remains is f32 accumulation (negligible)
    // and the final rounding of out to dt: half an ulp of |out| <= max |v|,
    // 2^-11 (f16) or 2^-8 (bf16) relative; 1.5 ulp allowed.
    const double ulp = dt == DType::f16 ? 0x1p-10 : 0x1p-7;
    const Tensor q = Tensor::randn({2, 4, 33, 40}, 1, dt).transpose(1, 2);  // [2, 33, 4, 40] view
    const Tensor k = Tensor::randn({2, 2, 65, 40}, 2, dt);
    const Tensor v = Tensor::randn({2, 2, 65, 24}, 3, dt).flip(2);
    const Tensor qh = q.transpose(1, 2);  // [2, 4, 33, 40], strided
    const Tensor mask = cast(Tensor::randn({33, 65}, 4), dt);
    AttentionOptions ref;
    ref.backend = "reference";
    ref.mask = cast(mask, DType::f64);
    ref.causal = Causal::bottom_right;
    const AttentionResult want =
        softmax_attention_lse(cast(qh, DType::f64), cast(k, DType::f64), cast(v, DType::f64), ref);
    for (const char* be : {"reference", "cpu"}) {
      INFO(dtype_name(dt) << " " << be);
      AttentionOptions opt = ref;
      opt.backend = be;
      opt.mask = mask;
      const AttentionResult got = softmax_attention_lse(qh, k, v, opt);
      REQUIRE(got.out.dtype() == dt);
      REQUIRE(got.lse.dtype() == DType::f32);
      const auto o = got.out.to_vector<double>(), w = want.out.to_vector<double>();
      for (std::size_t i = 0; i < o.size(); ++i) {
        INFO("out element " << i << ": " << o[i] << " vs " << w[i]);
        REQUIRE(std::abs(o[i] - w[i]) <= 1.5 * ulp * std::max(std::abs(w[i]), 0x1p-6));
      }
      const auto l = got.lse.to_vector<double>(), lw = want.lse.to_vector<double>();
      for (std::size_t i = 0; i < l.size(); ++i) REQUIRE(std::abs(l[i] - lw[i]) <= 1e-5);
      CHECK(softmax_attention_kernel(qh, k, v, opt).find("(via f32)") != std::string::npos);
    }
  }
}

TEST_CASE("attention: half-precision errors", "[attention][half][errors]") {
  const Tensor q = Tensor::randn({4, 8}, 1, DType::bf16);
  CORE_REQUIRE_ERROR(softmax_attention(q, q.to(DType::f16), q), "k has dtype f16 but q has bf16");
  AttentionOptions opt;
  opt.mask = Tensor::zeros({4, 4}, DType::f32);
  CORE_REQUIRE_ERROR(softmax_attention(q, q, q, opt),
                     "mask has dtype f32 but must be bool or q's dtype bf16");
  const Tensor out = Tensor::full({4, 8}, 5.0, DType::bf16);
  CORE_REQUIRE_ERROR(softmax_attention_out(out, q, q, q, {}, Tensor::empty({4}, DType::bf16)),
                     "lse has dtype bf16 but must be f32");
  for (double x : out.to_vector<double>()) REQUIRE(x == 5.0);
  CORE_REQUIRE_ERROR(softmax_attention(Tensor::zeros({4, 8}, DType::i32), q, q),
                     "q has dtype i32 but must be f32, f64, f16 or bf16");
}
