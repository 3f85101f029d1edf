// The row ops' backward kernels on cuda (softmax_backward,
// log_softmax_backward, layer_norm_backward, rms_norm_backward) against the
// reference backend, on fresh contiguous tensors so that the fast kernels
// take them: every configuration of norm_backward_fast (a row of 32 to 1024
// threads, several rows per block with the last ones short, more rows than
// one pass of the grid, two vectors per thread for f32 rows of 8192) and of
// softmax_backward_fast, then the general kernels (a row not a multiple of
// the vector, rows of several tiles, a transposed x). dweight and dbias
// are the same bits run to run.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/tensor.hpp"

using namespace strata;

namespace {

using cuda_test::kCuda;
using cuda_test::kGpu;
using cuda_test::kRef;
using cuda_test::tol;

// got ~ want within `rel` of want's largest magnitude (plus rel of each).
void require_near(const Tensor& got, const Tensor& want, double rel) {
  const std::vector<double> w = want.to(Device::cpu()).to_vector<double>();
  double scale = 0;
  for (double v : w) scale = std::max(scale, std::abs(v));
  cuda_test::require_close(got, want, rel * scale, rel);
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor h = t.to(Device::cpu()).contiguous();
  const auto* p = static_cast<const unsigned char*>(h.data_ptr());
  return {p, p + h.numel() * static_cast<std::int64_t>(itemsize(h.dtype()))};
}

// Every backward of x (and a grad) in dt on cuda against the reference.
// `transposed`: x64 and g64 are [n, rows], stored so, and both backends
// get the transposed views.
void check_backward(const Tensor& x64, const Tensor& g64, DType dt, bool transposed = false) {
  const Tensor xs = x64.to(dt), gs = g64.to(dt);
  const Tensor xds = xs.to(kGpu), gds = gs.to(kGpu);
  auto view = [&](const Tensor& t) { return transposed ? t.transpose(0, 1) : t; };
  const Tensor xh = view(xs), gh = view(gs), xd = view(xds), gd = view(gds);
  const std::int64_t n = xh.shape().back();
  const Tensor w = Tensor::randn({n}, 7, DType::f64).to(dt), wd = w.to(kGpu);
  // A 16-bit dx or sum is rounded once; f32 and f64 sums err by their length.
  const double t = 4 * tol(dt);
  const Tensor y = softmax(xh, 1, kRef), ly = log_softmax(xh, 1, kRef);
  require_near(softmax_backward(gd, y.to(kGpu), 1, kCuda), softmax_backward(gh, y, 1, kRef), t);
  require_near(log_softmax_backward(gd, ly.to(kGpu), 1, kCuda),
               log_softmax_backward(gh, ly, 1, kRef), t);
  const NormGrads lc = layer_norm_backward(gd, xd, wd, 1e-5, kCuda);
  const NormGrads lr = layer_norm_backward(gh, xh, w, 1e-5, kRef);
  require_near(lc.dx, lr.dx, t);
  require_near(lc.dweight, lr.dweight, t);
  require_near(lc.dbias, lr.dbias, t);
  require_near(layer_norm_backward(gd, xd, Tensor(), 1e-5, kCuda).dx,
               layer_norm_backward(gh, xh, Tensor(), 1e-5, kRef).dx, t);
  const NormGrads rc = rms_norm_backward(gd, xd, wd, 1e-6, kCuda);
  const NormGrads rr = rms_norm_backward(gh, xh, w, 1e-6, kRef);
  require_near(rc.dx, rr.dx, t);
  require_near(rc.dweight, rr.dweight, t);
  // Only dweight (no dx): the same sums.
  const Tensor dw = Tensor::empty({n}, dt, kGpu);
  rms_norm_backward_out(Tensor(), dw, gd, xd, wd, 1e-6, kCuda);
  CHECK(bytes_of(dw) == bytes_of(rc.dweight));
  // The same bits run to run.
  const NormGrads again = layer_norm_backward(gd, xd, wd, 1e-5, kCuda);
  CHECK(bytes_of(again.dx) == bytes_of(lc.dx));
  CHECK(bytes_of(again.dweight) == bytes_of(lc.dweight));
  CHECK(bytes_of(again.dbias) == bytes_of(lc.dbias));
}

}  // namespace

TEST_CASE("cuda rows backward: fast and general kernels vs reference",
          "[cuda][ops][rows][backward]") {
  // (rows, n): bf16 / f32 threads per row: 64 -> 32 / 32 (32 rows per
  // block; 9000 rows pass one grid of 132 blocks), 512 -> 64 / 128, 1040
  // -> 256 / 512, 4096 -> 512 / 1024, 8192 -> 1024 / 1024 with two vectors;
  // 4095 and 16392 the general kernels (a block per row, 16392 in three tiles).
  const struct {
    std::int64_t rows, n;
  } cases[] = {{4001, 64},   {9000, 64},  {2203, 512}, {1201, 1040},
               {1100, 4096}, {301, 8192}, {70, 4095},  {9, 16392}};
  for (const auto& c : cases)
    for (DType dt : {DType::bf16, DType::f16, DType::f32, DType::f64}) {
      if (dt == DType::f64 && c.rows > 2000) continue;  // the general kernel only; time
      INFO("rows " << c.rows << " n " << c.n << " dtype " << dtype_name(dt));
      std::vector<double> xv = Tensor::randn({c.rows, c.n}, 11, DType::f64).to_vector<double>();
      for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = 3.0 + 2.0 * xv[i];  // mean far from 0
      check_backward(Tensor::from_vector<double>(xv, {c.rows, c.n}),
                     Tensor::randn({c.rows, c.n}, 12, DType::f64), dt);
    }
  // x and grad transposed (rows of stride 300): the general kernels.
  for (DType dt : {DType::bf16, DType::f32}) {
    INFO("transposed, dtype " << dtype_name(dt));
    check_backward(Tensor::randn({2048, 300}, 13, DType::f64),
                   Tensor::randn({2048, 300}, 14, DType::f64), dt, true);
  }
}
