// The 16-bit row kernels (layer_norm, rms_norm, softmax, log_softmax) and
// the 16-bit gelu (GeluLowp) against the reference backend, f32 alongside.
// Shapes reach each row configuration of the 16-bit narrow dispatch (a warp
// with 1 or 2 vectors, blocks of 128, 256 and 512 threads) with more rows
// than resident groups, and row counts that leave the last group of a block
// short of layer_norm's staging depth (docs/ops.md, "cuda performance").
#include <cmath>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "strata/elementwise.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/tensor.hpp"

using namespace strata;

namespace {

const Device kGpu = Device::cuda(0);

OpOptions on(const char* backend) {
  OpOptions o;
  o.backend = backend;
  return o;
}
const OpOptions kRef = on("reference");
const OpOptions kCuda = on("cuda");

using cuda_test::require_close;
using cuda_test::tol;  // two ulps of a 16-bit dtype

}  // namespace

TEST_CASE("cuda rows16: 16-bit row kernels vs reference", "[cuda][ops][rows][rows16]") {
  // (rows, n): n = 128 / 512 bf16 take a warp with 1 / 2 vectors (4 rows per
  // block), 1040 a 128-thread block, 4096 256 threads, 8192 512 threads.
  // The row counts pass one wave of resident groups (132 SMs: 528 blocks of
  // 256 threads) and leave uneven rows per block.
  const struct {
    std::int64_t rows, n;
  } cases[] = {{4001, 128}, {2203, 512}, {1201, 1040}, {1100, 4096}, {601, 8192}};
  for (const auto& c : cases)
    for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
      INFO("rows " << c.rows << " n " << c.n << " dtype " << dtype_name(dt));
      const Tensor xh = Tensor::randn({c.rows, c.n}, 101, DType::f64).to(dt);
      const Tensor w = Tensor::randn({c.n}, 102, DType::f64).to(dt);
      const Tensor b = Tensor::randn({c.n}, 103, DType::f64).to(dt);
      const Tensor xd = xh.to(kGpu), wd = w.to(kGpu), bd = b.to(kGpu);
      const double t = tol(dt) * 2, atol = tol(dt);
      require_close(layer_norm(xd, wd, bd, 1e-5, kCuda), layer_norm(xh, w, b, 1e-5, kRef), atol, t);
      require_close(layer_norm(xd, Tensor(), Tensor(), 1e-5, kCuda),
                    layer_norm(xh, Tensor(), Tensor(), 1e-5, kRef), atol, t);
      require_close(rms_norm(xd, wd, 1e-6, kCuda), rms_norm(xh, w, 1e-6, kRef), atol, t);
      require_close(rms_norm(xd, Tensor(), 1e-6, kCuda), rms_norm(xh, Tensor(), 1e-6, kRef), atol,
                    t);
      require_close(softmax(xd, 1, kCuda), softmax(xh, 1, kRef), 1e-7, t);
      require_close(log_softmax(xd, 1, kCuda), log_softmax(xh, 1, kRef), t, t);
    }
}

TEST_CASE("cuda rows16: NaN and -inf rows", "[cuda][ops][rows][rows16]") {
  // 8 rows of 512: row 1 all -inf (NaN out), row 3 one NaN (NaN out), row 5
  // a -inf among finite values (0 out there), the rest finite.
  std::vector<double> v(8 * 512);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * 0.37) * 3.0;
  for (int j = 0; j < 512; ++j) v[512 + j] = -INFINITY;
  v[3 * 512 + 17] = NAN;
  v[5 * 512 + 300] = -INFINITY;
  for (DType dt : {DType::bf16, DType::f16}) {
    INFO("dtype " << dtype_name(dt));
    const Tensor h = Tensor::from_vector<double>(v, {8, 512}).to(dt);
    const Tensor d = h.to(kGpu);
    require_close(softmax(d, 1, kCuda), softmax(h, 1, kRef), 1e-7, tol(dt));
    require_close(log_softmax(d, 1, kCuda), log_softmax(h, 1, kRef), tol(dt), tol(dt));
  }
}

TEST_CASE("cuda gelu16: 16-bit and f32 gelu vs reference", "[cuda][ops][elementwise][rows16]") {
  // Every value of a dense sweep over [-16, 16] (the clamp at 15.5,
  // the flush of Phi(-u) below 2^-126 near u = 13.2), then the edges.
  std::vector<double> v;
  for (int i = -16000; i <= 16000; ++i) v.push_back(i * 1e-3);
  for (double e : {0.0, -0.0, 1e-30, -1e-30, 100.0, -100.0, 60000.0, -60000.0, double(INFINITY),
                   double(-INFINITY), double(NAN)})
    v.push_back(e);
  const std::int64_t n = static_cast<std::int64_t>(v.size());
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    INFO("dtype " << dtype_name(dt));
    const Tensor h = Tensor::from_vector<double>(v, {n}).to(dt);
    require_close(gelu(h.to(kGpu), kCuda), gelu(h, kRef), tol(dt) * 1e-2, tol(dt));
    // A [2, n/2] view with a last-dim stride of 2: the strided kernel.
    const std::int64_t half = n / 2;
    const Tensor s = h.narrow(0, 0, 2 * half).reshape({2, half});
    require_close(gelu(s.to(kGpu).slice(1, 0, half, 2), kCuda), gelu(s.slice(1, 0, half, 2), kRef),
                  tol(dt) * 1e-2, tol(dt));
  }
}
