// The cuda comparisons (bool out, every dtype), abs, pow, clamp, maximum and
// minimum against the reference backend on the same inputs: the engine's
// vector path at sizes around its width (16 bools per vector), the tiled
// path (a transposed input), flipped and broadcast views; the scalar's
// rounding rule; NaN; the backward rules at their kinks (ties, bounds, 0)
// and compound assignment into a view on the GPU. Runs only with a GPU
// (main.cpp exits 77 otherwise).
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/tensor.hpp"

using namespace strata;
using namespace cuda_test;  // kGpu, kRef, kCuda, tol, require_close

namespace {

constexpr DType kAll[] = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                          DType::boolean, DType::i32, DType::i64};
constexpr DType kFloats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Values on a grid of halves (ties between inputs and with 0.5), as dt.
Tensor halves(const Shape& s, std::uint64_t seed, DType dt) {
  const Tensor r = Tensor::randn(s, seed, DType::f64);
  std::vector<double> v = r.to_vector<double>();
  for (double& x : v) x = std::round(2 * x) / 2;
  return Tensor::from_vector<double>(v, s).to(dt);
}

using CmpFn = Tensor (*)(const Tensor&, const Tensor&, const OpOptions&);
using CmpScalarFn = Tensor (*)(const Tensor&, double, const OpOptions&);
const CmpFn kCmp[] = {&gt, &ge, &lt, &le, &eq, &ne};
const CmpScalarFn kCmpScalar[] = {&gt, &ge, &lt, &le, &eq, &ne};

}  // namespace

TEST_CASE("cuda compare: every comparison and dtype, every engine path, exact",
          "[cuda][ops][compare]") {
  for (const DType dt : kAll) {
    INFO("dtype " << dtype_name(dt));
    for (const std::int64_t n : {1, 15, 16, 17, 1000, 4099}) {
      INFO("n " << n);
      const Tensor a = halves({3, n}, 1, dt), b = halves({3, n}, 2, dt);
      const Tensor ad = a.to(kGpu), bd = b.to(kGpu);
      const Tensor row = halves({1, n}, 3, dt);  // stride-0 broadcast over rows
      for (int k = 0; k < 6; ++k) {
        INFO("comparison " << k);
        require_close(kCmp[k](ad, bd, kCuda), kCmp[k](a, b, kRef), 0, 0);
        require_close(kCmp[k](ad, row.to(kGpu), kCuda), kCmp[k](a, row, kRef), 0, 0);
        require_close(kCmpScalar[k](ad, 0.5, kCuda), kCmpScalar[k](a, 0.5, kRef), 0, 0);
        require_close(kCmpScalar[k](ad.flip(1), -1.0, kCuda), kCmpScalar[k](a.flip(1), -1.0, kRef),
                      0, 0);
      }
    }
    // A transposed input (the tiled path) and a strided bool output.
    const Tensor a = halves({45, 67}, 4, dt), bt_base = halves({67, 45}, 5, dt);
    const Tensor bt = bt_base.transpose(0, 1), ad = a.to(kGpu);
    const Tensor btd = bt_base.to(kGpu).transpose(0, 1);
    for (int k = 0; k < 6; ++k) {
      INFO("comparison " << k << " transposed");
      require_close(kCmp[k](ad, btd, kCuda), kCmp[k](a, bt, kRef), 0, 0);
    }
    const Tensor out = Tensor::zeros({45, 134}, DType::boolean, kGpu).slice(1, 0, 134, 2);
    ge_out(out, btd, ad, kCuda);
    require_close(out, ge(bt, a, kRef), 0, 0);
  }
}

TEST_CASE("cuda compare: the scalar rounded to a floating dtype; NaN", "[cuda][ops][compare]") {
  const Tensor x32 = Tensor::full({40}, 0.1, DType::f32, kGpu);
  require_close(eq(x32, 0.1, kCuda), Tensor::full({40}, 1.0, DType::boolean), 0, 0);
  require_close(gt(x32.to(DType::f64), 0.1, kCuda), Tensor::full({40}, 1.0, DType::boolean), 0, 0);
  const Tensor x16 = Tensor::full({40}, 0.0999755859375, DType::f16, kGpu);
  require_close(eq(x16, 0.1, kCuda), Tensor::full({40}, 1.0, DType::boolean), 0, 0);
  const Tensor i = Tensor::from_vector<std::int64_t>({2, 3}, {2}).to(kGpu);
  require_close(ge(i, 2.5, kCuda), Tensor::from_vector<double>({0, 1}, {2}).to(DType::boolean), 0,
                0);
  const std::int64_t big = (std::int64_t(1) << 60) + 1;
  const Tensor p = Tensor::from_vector<std::int64_t>({big}, {1}).to(kGpu);
  const Tensor q = Tensor::from_vector<std::int64_t>({big - 1}, {1}).to(kGpu);
  require_close(gt(p, q, kCuda), Tensor::full({1}, 1.0, DType::boolean), 0, 0);
  const Tensor n = Tensor::from_vector<double>({kNaN, 1.0}, {2});
  for (int k = 0; k < 6; ++k)
    require_close(kCmp[k](n.to(kGpu), n.to(kGpu), kCuda), kCmp[k](n, n, kRef), 0, 0);
}

TEST_CASE("cuda math: abs, pow, clamp, maximum, minimum vs reference", "[cuda][ops][elementwise]") {
  for (const DType dt : kFloats) {
    INFO("dtype " << dtype_name(dt));
    const double t = tol(dt);
    const Tensor a = mul(Tensor::randn({37, 129}, 6, DType::f64), 2.0, kRef).to(dt);
    const Tensor b_base = Tensor::randn({129, 37}, 7, DType::f64).to(dt);  // b transposed
    const Tensor b = b_base.transpose(0, 1), bd = b_base.to(kGpu).transpose(0, 1);
    const Tensor pos = add(mul(Tensor::rand({37, 129}, 8, DType::f64), 2.9, kRef), 0.1, kRef);
    const Tensor ad = a.to(kGpu);
    const Tensor pd = pos.to(dt).to(kGpu), ph = pos.to(dt);
    require_close(abs(ad, kCuda), abs(a, kRef), 0, 0);
    require_close(maximum(ad, bd, kCuda), maximum(a, b, kRef), 0, 0);
    require_close(minimum(ad.flip(0), bd, kCuda), minimum(a.flip(0), b, kRef), 0, 0);
    require_close(clamp(ad, -0.5, 0.75, kCuda), clamp(a, -0.5, 0.75, kRef), 0, 0);
    require_close(clamp(ad, std::nullopt, 0.75, kCuda), clamp(a, std::nullopt, 0.75, kRef), 0, 0);
    require_close(clamp(ad, 0.75, -0.5, kCuda), clamp(a, 0.75, -0.5, kRef), 0, 0);
    const double pt = dt == DType::f32 ? 1e-5 : dt == DType::f64 ? 1e-13 : t;
    require_close(pow(pd, 1.75, kCuda), pow(ph, 1.75, kRef), 0, pt);
    require_close(pow(ad, 3.0, kCuda), pow(a, 3.0, kRef), 1e-6, pt);
    require_close(pow(pd, bd, kCuda), pow(ph, b, kRef), 0, pt);
  }
  // NaN: maximum/minimum and clamp keep it.
  const Tensor n = Tensor::from_vector<double>({kNaN, 1.0, 2.0}, {3});
  const Tensor m = Tensor::from_vector<double>({0.0, kNaN, 3.0}, {3});
  require_close(maximum(n.to(kGpu), m.to(kGpu), kCuda), maximum(n, m, kRef), 0, 0);
  require_close(minimum(n.to(kGpu), m.to(kGpu), kCuda), minimum(n, m, kRef), 0, 0);
  require_close(clamp(n.to(kGpu), 0.0, 1.5, kCuda), clamp(n, 0.0, 1.5, kRef), 0, 0);
}

TEST_CASE("cuda autograd: ties, clamp bounds, abs at 0, pow at 0 as the reference",
          "[cuda][autograd][compare]") {
  const Tensor a = Tensor::from_vector<double>({1, 5, 2, 0, 3, 9}, {2, 3});
  const Tensor r = Tensor::from_vector<double>({1, 2, 2}, {3});  // ties with a's row 0
  const Tensor g = Tensor::from_vector<double>({1, 2, 4, 8, 16, 32}, {2, 3});
  const auto grads = [&](const OpOptions& o, Device dev) {
    const Tensor ad = a.to(dev), rd = r.to(dev);
    autograd::Tape tape;
    tape.watch(ad);
    tape.watch(rd);
    const Tensor y = add(add(maximum(ad, rd, o), clamp(ad, 0.0, 2.0, o), o),
                         add(abs(sub(ad, 2.0, o), o), pow(ad, rd, o), o), o);
    tape.backward(y, g.to(dev), o);
    return std::vector<Tensor>{tape.grad(ad), tape.grad(rd)};
  };
  const std::vector<Tensor> want = grads(kRef, Device::cpu()), got = grads(kCuda, kGpu);
  require_close(got[0], want[0], 1e-12, 1e-12);
  require_close(got[1], want[1], 1e-12, 1e-12);
}

TEST_CASE("cuda compound assignment: into a narrow view, the rest untouched", "[cuda][ops]") {
  const Tensor host = Tensor::arange(24, DType::f32).reshape({4, 6});
  const Tensor base = host.to(kGpu);
  const Tensor view = base.narrow(1, 2, 3).narrow(0, 1, 2);
  view += Tensor::from_vector<float>({10, 20, 30}, {3}).to(kGpu);
  view *= 2.0;
  const Tensor want = host.clone();
  const Tensor wv = want.narrow(1, 2, 3).narrow(0, 1, 2);
  add_out(wv, wv, Tensor::from_vector<float>({10, 20, 30}, {3}), kRef);
  mul_out(wv, wv, 2.0, kRef);
  require_close(base, want, 0, 0);
}
