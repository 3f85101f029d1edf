// f16/bf16 matmul and linear on the cuBLAS path with a bias and/or
// accumulate round once (backends/cuda/matmul/matmul_cublas.cu: the product
// in f32, then one pass adds the bias and out's values and rounds). Each
// case against the reference backend on the host (an f64 sum that starts
// from out's value, rounded once), held to one rounding (require_close).
// The families are the ones run s12r4 (H200) found rounded more than once
// (docs/ops.md): long rows with K = 2-3 and b a window, K = 1 with 16 rows,
// b with flipped rows and a bias alone, contiguous K = 512 with a bias and
// accumulate; then accumulate without a bias, batches (strided and pointer
// arrays), a strided bias, out column-major or strided, K = 0. The row
// counts are above what gemv_rows takes by default, so cuBLAS runs them.
// The binary skips without a GPU.
#include <cmath>
#include <cstdint>
#include <iterator>

#include "catch.hpp"
#include "matmul_test_util.hpp"
#include "strata/matmul.hpp"

using namespace strata;
using matmul_test::Layout;
using matmul_test::make_view;
using matmul_test::on;
using matmul_test::require_close;

namespace {

const Device kGpu = Device::cuda(0);

// How b [K, N] sits in memory.
enum class BLay {
  layout,  // one of matmul_test's Layouts (bl below)
  window,  // columns [0, N) of rows padded to a multiple of 8 (+ 8)
};

// hb (host [K, N]) on the GPU, everything around it NaN.
Tensor place_b(const Tensor& hb, BLay how, Layout l) {
  if (how == BLay::layout) return make_view(hb, l, kGpu);
  const std::int64_t K = hb.size(0), N = hb.size(1), wide = (N + 9 + 7) / 8 * 8;
  Tensor v = Tensor::full({K, wide}, NAN, hb.dtype(), kGpu).narrow(1, 0, N);
  v.copy_from(hb);
  return v;
}

struct Case {
  DType dt;
  std::int64_t M, K, N;
  Layout al = Layout::contiguous;
  BLay bhow = BLay::layout;
  Layout bl = Layout::contiguous;
  bool bias = true, acc = true;
  Layout ol = Layout::contiguous;  // out's layout
};

// linear_out (with a bias: y (+)= x W^T + bias, W^T = b) or matmul_out on
// the GPU, and the same on the reference backend from out's same values.
void check(const Case& c, std::uint64_t seed) {
  INFO("dtype " << dtype_name(c.dt) << " M " << c.M << " K " << c.K << " N " << c.N << " a "
                << matmul_test::name(c.al) << " b "
                << (c.bhow == BLay::window ? "window" : matmul_test::name(c.bl)) << " bias "
                << c.bias << " accumulate " << c.acc << " out " << matmul_test::name(c.ol));
  const Tensor ha = Tensor::randn({c.M, c.K}, seed, c.dt);
  const Tensor hb = Tensor::randn({c.K, c.N}, seed + 1, c.dt);
  const Tensor hbias = Tensor::randn({c.N}, seed + 2, c.dt);
  const Tensor ho = Tensor::randn({c.M, c.N}, seed + 3, c.dt);
  const Tensor a = make_view(ha, c.al, kGpu), b = place_b(hb, c.bhow, c.bl);
  const Tensor out = make_view(ho, c.ol, kGpu);
  const Tensor want = ho.clone();  // the reference adds into a copy of the same values
  MatmulOptions g = on("cuda"), r = on("reference");
  g.accumulate = r.accumulate = c.acc;
  if (c.bias) {
    linear_out(out, a, b.transpose(0, 1), hbias.to(kGpu), g);
    linear_out(want, ha, hb.transpose(0, 1), hbias, r);
  } else {
    matmul_out(out, a, b, g);
    matmul_out(want, ha, hb, r);
  }
  require_close(out.to(Device::cpu()).contiguous(), want, c.K);
}

}  // namespace

TEST_CASE("cuda matmul 16-bit rounding: the families run s12r4 found",
          "[cuda][matmul][matmul_rounding]") {
  std::uint64_t seed = 31000;
  for (DType dt : {DType::f16, DType::bf16}) {
    // Long rows, K = 2-3, b a window of padded rows, bias and accumulate
    // (up to 1757 of 98400 elements beyond two roundings before).
    const std::int64_t kn[][2] = {{2, 12291}, {3, 6150}};
    for (const auto& [K, N] : kn) {
      Case c{dt, 16, K, N};
      c.bhow = BLay::window;
      check(c, seed += 4);
      c.bias = false;  // accumulate alone
      check(c, seed += 4);
    }
    // K = 1, 16 rows (gemv takes K = 1 up to 8 rows only).
    for (int v = 1; v < 4; ++v) {  // bias, accumulate, both
      Case c{dt, 16, 1, 40};
      c.bias = (v & 1) != 0;
      c.acc = (v & 2) != 0;
      check(c, seed += 4);
    }
    // b with flipped rows (a negative K stride: copied first), a bias and
    // no accumulate, a in every layout, out column-major every third case
    // (beyond one rounding before at M 6-16 in bf16).
    const Layout a_lays[] = {Layout::contiguous, Layout::transposed, Layout::sliced,
                             Layout::neg_rows,   Layout::neg_cols,   Layout::inner_step};
    for (std::int64_t M = 6; M <= 16; ++M) {
      Case c{dt, M, 130, 64};
      c.al = a_lays[static_cast<std::size_t>(M) % std::size(a_lays)];
      c.bl = Layout::neg_rows;
      c.acc = M % 2 == 1;
      c.ol = M % 3 == 1 ? Layout::transposed : Layout::contiguous;
      check(c, seed += 4);
    }
    // Contiguous, the cuBLASLt epilogue's layout before: bias and
    // accumulate at K = 512 (1-4 elements beyond two roundings before).
    const std::int64_t mkn[][3] = {{8, 512, 1408}, {8, 512, 1536}, {3, 512, 1408}, {3, 96, 200}};
    for (const auto& [M, K, N] : mkn) check(Case{dt, M, K, N}, seed += 4);
  }
}

TEST_CASE("cuda matmul 16-bit rounding: layouts, strided bias, batches, K = 0",
          "[cuda][matmul][matmul_rounding]") {
  std::uint64_t seed = 32000;
  for (DType dt : {DType::f16, DType::bf16}) {
    // Every out layout (strided ones went through a temporary and a copy
    // back before) with a bias and accumulate, and accumulate alone.
    for (Layout ol : {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::neg_rows,
                      Layout::neg_cols, Layout::inner_step})
      for (bool bias : {true, false}) {
        Case c{dt, 12, 48, 40};
        c.bl = Layout::sliced;  // a misaligned window: refused by cuBLASLt before
        c.ol = ol;
        c.bias = bias;
        check(c, seed += 4);
      }
    // A bias with a stride, out column-major, no accumulate.
    {
      INFO("strided bias");
      const std::int64_t M = 10, K = 64, N = 72;
      const Tensor ha = Tensor::randn({M, K}, seed += 4, dt);
      const Tensor hw = Tensor::randn({N, K}, seed + 1, dt);
      const Tensor hbias = Tensor::randn({2 * N}, seed + 2, dt).slice(0, 0, 2 * N, 2);
      const Tensor ho = Tensor::randn({M, N}, seed + 3, dt);
      for (bool acc : {false, true}) {
        const Tensor out = make_view(ho, Layout::transposed, kGpu);
        const Tensor want = ho.clone();
        MatmulOptions g = on("cuda"), r = on("reference");
        g.accumulate = r.accumulate = acc;
        linear_out(out, ha.to(kGpu), hw.to(kGpu), hbias.to(kGpu), g);
        linear_out(want, ha, hw, hbias, r);
        require_close(out.to(Device::cpu()).contiguous(), want, K);
      }
    }
    // Batches, accumulate: one strided batch, and a batch whose dims do
    // not merge (a's batch dims sliced): pointer arrays.
    for (Layout al : {Layout::contiguous, Layout::sliced, Layout::bcast_batch}) {
      INFO("batch, a " << matmul_test::name(al));
      const std::int64_t M = 9, K = 40, N = 24;
      const Tensor ha = Tensor::randn({2, 3, M, K}, seed += 4, dt);
      const Tensor hb = Tensor::randn({2, 3, K, N}, seed + 1, dt);
      const Tensor hbig = Tensor::randn({2, 5, M, K}, seed + 2, dt);
      const Tensor hs = hbig.slice(1, 1, 4);  // batch strides that do not merge
      const Tensor ho = Tensor::randn({2, 3, M, N}, seed + 3, dt);
      const Tensor& hx = al == Layout::sliced ? hs : ha;
      const Tensor x =
          al == Layout::sliced ? hbig.to(kGpu).slice(1, 1, 4) : make_view(ha, al, kGpu);
      const Tensor hxv = al == Layout::bcast_batch ? x.to(Device::cpu()).contiguous() : hx;
      const Tensor out = make_view(ho, Layout::contiguous, kGpu);
      const Tensor want = ho.clone();
      MatmulOptions g = on("cuda"), r = on("reference");
      g.accumulate = r.accumulate = true;
      matmul_out(out, x, make_view(hb, Layout::transposed, kGpu), g);
      matmul_out(want, hxv, hb, r);
      require_close(out.to(Device::cpu()).contiguous(), want, K);
    }
    // Linear with a batched x and a bias, accumulate.
    {
      INFO("batched linear");
      const std::int64_t M = 5, K = 33, N = 40;
      const Tensor hx = Tensor::randn({3, M, K}, seed += 4, dt);
      const Tensor hw = Tensor::randn({N, K}, seed + 1, dt);
      const Tensor hbias = Tensor::randn({N}, seed + 2, dt);
      const Tensor ho = Tensor::randn({3, M, N}, seed + 3, dt);
      const Tensor out = make_view(ho, Layout::sliced, kGpu);
      const Tensor want = ho.clone();
      MatmulOptions g = on("cuda"), r = on("reference");
      g.accumulate = r.accumulate = true;
      linear_out(out, make_view(hx, Layout::transposed, kGpu), hw.to(kGpu), hbias.to(kGpu), g);
      linear_out(want, hx, hw, hbias, r);
      require_close(out.to(Device::cpu()).contiguous(), want, K);
    }
    // K = 0 with a bias and accumulate: out + bias, rounded once (12 rows:
    // more than gemv takes).
    {
      INFO("K = 0");
      const Tensor hbias = Tensor::randn({24}, seed += 4, dt);
      const Tensor ho = Tensor::randn({12, 24}, seed + 1, dt);
      const Tensor out = make_view(ho, Layout::transposed, kGpu);
      const Tensor want = ho.clone();
      MatmulOptions g = on("cuda"), r = on("reference");
      g.accumulate = r.accumulate = true;
      linear_out(out, Tensor::zeros({12, 0}, dt, kGpu), Tensor::zeros({24, 0}, dt, kGpu),
                 hbias.to(kGpu), g);
      linear_out(want, Tensor::zeros({12, 0}, dt), Tensor::zeros({24, 0}, dt), hbias, r);
      require_close(out.to(Device::cpu()).contiguous(), want, 0);
    }
  }
}
