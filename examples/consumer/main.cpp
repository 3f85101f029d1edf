// Smallest use of an installed Strata: one attention call on a fused-QKV
// view, checked against the reference backend, then the README's block of
// ops (norm, linear, activation, operators, rotary) on the default backend
// and on the reference, compared.
#include <cmath>
#include <cstdio>
#include <strata/strata.hpp>
#include <vector>

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

  // The README's block, on the default backend and on the reference.
  double block_worst = 0;
  Tensor ys[2];
  for (int i = 0; i < 2; ++i) {
    MatmulOptions mo;
    OpOptions oo;
    mo.backend = oo.backend = i == 0 ? "auto" : "reference";
    Tensor x = Tensor::randn({2, 16, 64}, 2);  // [B, L, D]
    Tensor w_norm = Tensor::full({64}, 1.0), w_up = Tensor::randn({96, 64}, 3);
    Tensor h = rms_norm(x, w_norm, 1e-6, oo);
    Tensor up = linear(h, w_up, Tensor(), mo);  // [B, L, 96]
    ys[i] = add(mul(silu(up, oo), up, oo), 1.0, oo);
    Tensor pos = Tensor::arange(16, DType::i64);
    Tensor qr = rotary(q, pos, {}, oo);  // [1, 4, 16, 32]
    if (qr.shape() != q.shape()) return 1;
  }
  std::vector<float> y0 = ys[0].to_vector<float>(), y1 = ys[1].to_vector<float>();
  for (size_t i = 0; i < y0.size(); ++i)
    block_worst = std::fmax(block_worst, std::fabs(y0[i] - y1[i]) / (1 + std::fabs(y1[i])));
  std::printf("block of ops: max relative |auto - reference| = %.3g\n", block_worst);
  return worst < 1e-5 && block_worst < 1e-4 ? 0 : 1;
}
