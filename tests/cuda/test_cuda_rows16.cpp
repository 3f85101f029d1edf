// The 16-bit row kernels (layer_norm, rms_norm, softmax, log_softmax) and
// the 16-bit gelu (GeluLowp) against the reference backend, f32 alongside.
// Shapes reach each row configuration of the 16-bit narrow dispatch (a warp
// with 1 or 2 vectors, blocks of 128, 256 and 512 threads) with more rows
// than resident groups, and row counts that leave the last group of a block
// short of layer_norm's staging depth (docs/guide/ops.md, "Row ops").
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "special_rows.hpp"
#include "strata/elementwise.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/tensor.hpp"

namespace strata::cuda {
// Testing hook (rows_reg.cu): reg kernels launched by this process.
std::uint64_t rows_reg_launches_for_test();
}  // namespace strata::cuda

using namespace strata;

namespace {

using cuda_test::kCuda;
using cuda_test::kGpu;
using cuda_test::kRef;
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
      strata_test::require_row_ops_close(xh, w, b, dt, true);
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

namespace {

bool reg_variant() {
  const char* e = std::getenv("STRATA_ROWS_VARIANT");
  // The default (tuned) takes the reg kernels too (rows_variant.hpp); reg,
  // reg4 and reg8 are the tuning build's candidates.
  return e == nullptr || std::string(e).empty() || std::string(e) == "tuned" ||
         std::string(e) == "reg" || std::string(e) == "reg4" || std::string(e) == "reg8";
}

// [rows, n] in f64: vector v (elements 8v .. 8v + 7) centred on offset +
// 0.25 * (v % 64), plus noise of scale 0.5: every thread of a 128-512
// thread row sees its own mean and maximum, so a wrong between-thread
// term (layer_norm's (sum, M2) combine, softmax's rescale to the row's
// max) is far off; offset 24 puts the mean far from 0 (cancellation).
Tensor lanes(std::int64_t rows, std::int64_t n, double offset, double scale, std::uint64_t seed) {
  const std::vector<double> z = Tensor::randn({rows, n}, seed, DType::f64).to_vector<double>();
  std::vector<double> v(z.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = offset + scale * (0.25 * double((std::int64_t(i) % n / 8) % 64) + 0.5 * z[i]);
  return Tensor::from_vector<double>(v, {rows, n});
}

// layer_norm (weight and bias, neither, bias only, weight only), rms_norm,
// softmax and log_softmax of x64 in dt against the reference backend. With
// `transposed`, x64
// [n, rows] is converted and copied as stored and both backends get its
// transposed view [rows, n] (rows of stride `rows`): .to() copies into a
// fresh contiguous tensor, so a view must be taken after the copies.
void check_row_ops(const Tensor& x64, DType dt, bool transposed = false) {
  const Tensor xs = x64.to(dt), xds = xs.to(kGpu);
  const Tensor xh = transposed ? xs.transpose(0, 1) : xs;
  const Tensor xd = transposed ? xds.transpose(0, 1) : xds;
  const std::int64_t n = xh.shape().back();
  const Tensor w = Tensor::randn({n}, 7, DType::f64).to(dt);
  const Tensor b = Tensor::randn({n}, 8, DType::f64).to(dt);
  const Tensor wd = w.to(kGpu), bd = b.to(kGpu);
  const double t = tol(dt) * 2, atol = tol(dt);
  require_close(layer_norm(xd, wd, bd, 1e-5, kCuda), layer_norm(xh, w, b, 1e-5, kRef), atol, t);
  require_close(layer_norm(xd, Tensor(), Tensor(), 1e-5, kCuda),
                layer_norm(xh, Tensor(), Tensor(), 1e-5, kRef), atol, t);
  require_close(layer_norm(xd, Tensor(), bd, 1e-5, kCuda), layer_norm(xh, Tensor(), b, 1e-5, kRef),
                atol, t);
  require_close(layer_norm(xd, wd, Tensor(), 1e-5, kCuda), layer_norm(xh, w, Tensor(), 1e-5, kRef),
                atol, t);
  require_close(rms_norm(xd, wd, 1e-6, kCuda), rms_norm(xh, w, 1e-6, kRef), atol, t);
  require_close(softmax(xd, 1, kCuda), softmax(xh, 1, kRef), 1e-7, t);
  require_close(log_softmax(xd, 1, kCuda), log_softmax(xh, 1, kRef), t, t);
}

}  // namespace

TEST_CASE("cuda rows16: the reg candidate's row lengths and its fallbacks",
          "[cuda][ops][rows][rows16]") {
  // By default and (tuning builds) under STRATA_ROWS_VARIANT=reg, reg4 or reg8, rows of 256 / 512 /
  // 1024 vectors (2048, 4096, 8192 elements: blocks of 128 / 256 / 512 threads, reg4 64 / 128 /
  // 256, reg8 32 / 64 / 128) run the reg kernels: 8800 rows of 2048 pass the grid's cap (32 blocks
  // per SM), so blocks walk several rows and alternate their reduction slots. Every other shape
  // must fall back and still be right: lengths of 8k + 8 and not a multiple of 8, one element, rows
  // past the fused kernels' 16384, a transposed x. Other variants run the same cases on their own
  // paths.
  const struct {
    std::int64_t rows, n;
    double offset, scale;
    bool reg;  // the shape the reg kernels take
  } cases[] = {
      {8800, 2048, 0.0, 1.0, true}, {300, 2048, 24.0, 1.0, true},  {1100, 4096, 0.0, 1.0, true},
      {520, 4096, 24.0, 1.0, true}, {64, 4096, 0.0, 1000.0, true}, {130, 8192, 24.0, 1.0, true},
      {70, 4104, 0.0, 1.0, false},  {90, 4095, 24.0, 1.0, false},  {33, 2047, 0.0, 1.0, false},
      {40, 1, 0.0, 1.0, false},     {9, 16392, 0.0, 1.0, false}};
  for (const auto& c : cases)
    for (DType dt : {DType::bf16, DType::f16}) {
      if (c.rows > 5000 && dt == DType::f16) continue;  // the reference's time
      INFO("rows " << c.rows << " n " << c.n << " offset " << c.offset << " scale " << c.scale
                   << " dtype " << dtype_name(dt));
      const std::uint64_t before = cuda::rows_reg_launches_for_test();
      check_row_ops(lanes(c.rows, c.n, c.offset, c.scale, 200 + c.n), dt);
      // layer_norm four times (reg8: each weight/bias kernel) and softmax once on the reg kernels.
      CHECK(cuda::rows_reg_launches_for_test() - before == (reg_variant() && c.reg ? 5u : 0u));
    }
  // x transposed ([4096, 64] stored, rows of 4096 with stride 64): no
  // vector loads, so the fallback. (The view is taken after the copies:
  // Tensor::to would make it contiguous, and the reg kernels would rightly
  // run on it.)
  const Tensor xt = lanes(4096, 64, 0.0, 1.0, 300);
  for (DType dt : {DType::bf16, DType::f16}) {
    INFO("transposed, dtype " << dtype_name(dt));
    const std::uint64_t before = cuda::rows_reg_launches_for_test();
    check_row_ops(xt, dt, true);
    CHECK(cuda::rows_reg_launches_for_test() == before);
  }
}

TEST_CASE("cuda rows16: NaN, infinities and constant rows of 2048 16-bit elements",
          "[cuda][ops][rows][rows16]") {
  // Row 0 all -inf; 1 one NaN; 2 one -inf; 3 the 16 elements of thread 5
  // (vectors 5 and 133 of a 128-thread row) -inf, 4 those NaN; 5 one
  // +inf; 6 constant (variance 0); 7 ordinary. 2048 columns: the reg
  // kernels' 128-thread blocks under STRATA_ROWS_VARIANT=reg (64 for reg4,
  // 32 for reg8: thread 5 then holds vectors 5 + 32i, finite ones too).
  const auto check = [](DType dt, const Tensor& h, const Tensor& d, const Tensor& b) {
    require_close(softmax(d, 1, kCuda), softmax(h, 1, kRef), 1e-7, tol(dt));
    require_close(layer_norm(d, Tensor(), b.to(kGpu), 1e-5, kCuda),
                  layer_norm(h, Tensor(), b, 1e-5, kRef), tol(dt), tol(dt));
  };
  strata_test::for_16bit_rows(strata_test::special_rows(2048, 128, 2000), check);
}
