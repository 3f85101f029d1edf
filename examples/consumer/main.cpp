// Smallest use of an installed Strata: one attention call on a fused-QKV
// view, checked against the reference backend.
#include <cmath>
#include <cstdio>
#include <strata/strata.hpp>

int main() {
  using namespace strata;
  // One [1, 4, 16, 3*32] buffer; q, k, v are column slices of it (views).
  Tensor qkv = Tensor::randn({1, 4, 16, 96}, /*seed=*/7);
  Tensor q = qkv.narrow(-1, 0, 32), k = qkv.narrow(-1, 32, 32), v = qkv.narrow(-1, 64, 32);
  AttentionOptions opt;
  opt.causal = Causal::bottom_right;
  Tensor out = softmax_attention(q, k, v, opt);
  opt.backend = "reference";
  Tensor ref = softmax_attention(q, k, v, opt);
  double worst = 0;
  std::vector<float> a = out.to_vector<float>(), b = ref.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) worst = std::fmax(worst, std::fabs(a[i] - b[i]));
  std::printf("strata %s: out %s, max |cpu - reference| = %.3g\n", kVersion,
              shape_str(out.shape()).c_str(), worst);
  return worst < 1e-5 ? 0 : 1;
}
