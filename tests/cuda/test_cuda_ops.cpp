// The cuda elementwise and row kernels against the reference backend, on
// the same inputs: each input is built on the host, copied to the GPU as
// its whole base buffer, and the same view (contiguous, transposed, stride-0
// broadcast, flipped, an offset slice of a fused buffer, a last-dim stride
// of 2) is taken on both sides, so the kernels see the strides the
// reference sees. Every floating dtype; a 64-bit-index case past 2^31
// elements ([large]); empty tensors; a bad embedding id (an error, out
// untouched). Runs only with a GPU (main.cpp exits 77 otherwise).
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "ops_test_util.hpp"
#include "strata/elementwise.hpp"
#include "strata/embedding.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/rotary.hpp"
#include "strata/tensor.hpp"
#include "test_core_util.hpp"

using namespace strata;

namespace {

const Device kGpu = Device::cuda(0);
constexpr DType kFloats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};

using ops_test::on;
const OpOptions kRef = on("reference");
const OpOptions kCuda = on("cuda");

// Relative tolerance of a result stored as dt against the f64 reference
// rounded to dt: two ulps of dt, or for f32 the error of f32 maths (sums of
// up to ~10^4 terms in f32, expf/erff within a few ulps).
double tol(DType dt) { return ops_test::per_dtype(dt, 1e-12, 3e-5, 2e-3, 1.6e-2, 0); }

// One assertion per compare (cuda_compare.hpp), and the result on the GPU.
void require_close(const Tensor& got, const Tensor& want, double atol, double rtol) {
  REQUIRE(got.device() == kGpu);
  cuda_test::require_close(got, want, atol, rtol);
}

enum class Layout { contiguous, transposed, broadcast, flipped, offset_slice, strided_last };
constexpr Layout kLayouts[] = {Layout::contiguous, Layout::transposed,   Layout::broadcast,
                               Layout::flipped,    Layout::offset_slice, Layout::strided_last};
const char* name(Layout l) {
  const char* n[] = {"contiguous", "transposed",   "broadcast",
                     "flipped",    "offset_slice", "strided_last"};
  return n[static_cast<int>(l)];
}

// The same view of shape s (rank >= 2) on the host and on the GPU.
struct Pair {
  Tensor host, dev;
};
Pair make(Layout l, const Shape& s, std::uint64_t seed, DType dt, double scale = 1.0) {
  const int r = static_cast<int>(s.size());
  const std::int64_t n = s[r - 1];
  Shape base = s;
  std::function<Tensor(const Tensor&)> view = [](const Tensor& t) { return t; };
  switch (l) {
    case Layout::contiguous:
      break;
    case Layout::transposed:
      std::swap(base[r - 1], base[r - 2]);
      view = [r](const Tensor& t) { return t.transpose(r - 1, r - 2); };
      break;
    case Layout::broadcast:
      base[0] = 1;
      view = [s](const Tensor& t) { return t.expand(s); };
      break;
    case Layout::flipped:
      view = [r](const Tensor& t) { return t.flip(r - 1).flip(0); };
      break;
    case Layout::offset_slice:  // the middle third of a [.., 3n + 1] fused buffer
      base[r - 1] = 3 * n + 1;
      view = [r, n](const Tensor& t) { return t.narrow(r - 1, n + 1, n); };
      break;
    case Layout::strided_last:
      base[r - 1] = 2 * n;
      view = [r, n](const Tensor& t) { return t.slice(r - 1, 0, 2 * n, 2); };
      break;
  }
  Tensor h = Tensor::randn(base, seed, DType::f64);
  if (scale != 1.0) h = mul(h, scale, kRef);
  h = h.to(dt);
  return {view(h), view(h.to(kGpu))};
}

// An output view on the GPU that is not contiguous: flipped rows of a
// fused buffer (offset 3, row stride 2n + 3, last-dim stride -1).
Tensor strided_out(const Shape& s, DType dt) {
  const int r = static_cast<int>(s.size());
  Shape f = s;
  f[r - 1] = 2 * s[r - 1] + 3;
  return Tensor::full(f, 7.25, dt).to(kGpu).narrow(r - 1, 3, s[r - 1]).flip(r - 1);
}

}  // namespace

// ============================ elementwise ==================================

TEST_CASE("cuda elementwise: binary and scalar ops vs reference on every layout",
          "[cuda][ops][elementwise]") {
  const Shape s{37, 129};
  for (DType dt : kFloats)
    for (Layout la : kLayouts) {
      INFO("dtype " << dtype_name(dt) << " layout of a " << name(la));
      const Layout lb = la == Layout::transposed ? Layout::flipped : Layout::transposed;
      const Pair a = make(la, s, 11, dt), b = make(lb, s, 12, dt);
      const double t = tol(dt);
      require_close(add(a.dev, b.dev, kCuda), add(a.host, b.host, kRef), 1e-12, t);
      require_close(sub(a.dev, b.dev, kCuda), sub(a.host, b.host, kRef), 1e-12, t);
      require_close(mul(a.dev, b.dev, kCuda), mul(a.host, b.host, kRef), 1e-12, t);
      require_close(div(a.dev, b.dev, kCuda), div(a.host, b.host, kRef), 1e-12, t);
      // A row vector and a scalar tensor broadcast against a (stride 0).
      const Pair row = make(Layout::contiguous, {1, s[1]}, 13, dt);
      require_close(add(a.dev, row.dev, kCuda), add(a.host, row.host, kRef), 1e-12, t);
      const Tensor one_h = Tensor::full({1}, 0.75, dt);
      require_close(mul(a.dev, one_h.to(kGpu), kCuda), mul(a.host, one_h, kRef), 1e-12, t);
      require_close(add(a.dev, 1.5, kCuda), add(a.host, 1.5, kRef), 1e-12, t);
      require_close(sub(a.dev, 1.5, kCuda), sub(a.host, 1.5, kRef), 1e-12, t);
      require_close(rsub(a.dev, 1.5, kCuda), rsub(a.host, 1.5, kRef), 1e-12, t);
      require_close(mul(a.dev, -3.0, kCuda), mul(a.host, -3.0, kRef), 1e-12, t);
      require_close(div(a.dev, 3.0, kCuda), div(a.host, 3.0, kRef), 1e-12, t);
      require_close(rdiv(a.dev, 3.0, kCuda), rdiv(a.host, 3.0, kRef), 1e-12, t);
      // A strided output.
      const Tensor o = strided_out(s, dt);
      add_out(o, a.dev, b.dev, kCuda);
      require_close(o, add(a.host, b.host, kRef), 1e-12, t);
    }
}

TEST_CASE("cuda elementwise: unary maths vs reference", "[cuda][ops][elementwise]") {
  using Fn = Tensor (*)(const Tensor&, const OpOptions&);
  const std::pair<const char*, Fn> fns[] = {{"neg", &neg},         {"exp", &exp},
                                            {"log", &log},         {"sqrt", &sqrt},
                                            {"rsqrt", &rsqrt},     {"tanh", &tanh},
                                            {"sigmoid", &sigmoid}, {"relu", &relu},
                                            {"gelu", &gelu},       {"gelu_tanh", &gelu_tanh},
                                            {"silu", &silu}};
  for (DType dt : kFloats)
    for (Layout l : {Layout::contiguous, Layout::transposed, Layout::flipped, Layout::strided_last,
                     Layout::offset_slice}) {
      const Pair a = make(l, {19, 261}, 21, dt, 2.0);
      for (const auto& [nm, f] : fns) {
        INFO("op " << nm << " dtype " << dtype_name(dt) << " layout " << name(l));
        // f32 transcendental functions: a few ulps; near a zero of the result
        // (tanh, gelu) an absolute term.
        const double atol = dt == DType::f64 ? 1e-14 : tol(dt) * 1e-2;
        require_close(f(a.dev, kCuda), f(a.host, kRef), atol, tol(dt));
      }
    }
}

TEST_CASE("cuda elementwise: where, fill, cast between every dtype", "[cuda][ops][elementwise]") {
  const Shape s{23, 77};
  const Pair c0 = make(Layout::transposed, s, 31, DType::f64);
  const Tensor cond_h = cast(relu(c0.host, kRef), DType::boolean, kRef), cond_d = cond_h.to(kGpu);
  const DType all[] = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                       DType::boolean, DType::i32, DType::i64};
  for (DType dt : all) {
    INFO("dtype " << dtype_name(dt));
    // Values that every dtype holds exactly after a cast from f64 * 8.
    const Pair a = make(Layout::flipped, s, 32, DType::f64, 8.0);
    const Pair b = make(Layout::offset_slice, s, 33, DType::f64, 8.0);
    const Tensor ah = cast(a.host, dt, kRef), bh = cast(b.host, dt, kRef);
    const Tensor ad = cast(a.dev, dt, kCuda), bd = cast(b.dev, dt, kCuda);
    // f64 -> f16/bf16 goes through f32 on the GPU (as on the cpu): one ulp apart
    // where the f32 value lands on a midpoint of the narrow type.
    const double tn = dt == DType::f16 || dt == DType::bf16 ? tol(dt) : 0;
    require_close(ad, ah, 0, tn);
    require_close(where(cond_d, ad, bd, kCuda), where(cond_h, ah, bh, kRef), 0, tn);
    const Tensor f = strided_out(s, dt);
    fill_(f, 3.0, kCuda);
    require_close(f, Tensor::full(s, 3.0, dt), 0, 0);
    for (DType to : all) {
      INFO("cast to " << dtype_name(to));
      const Tensor o = strided_out(s, to);
      copy_(o, ad, kCuda);
      const double tt = to == DType::f16 || to == DType::bf16 ? tol(to) : 0;
      require_close(o, cast(ah, to, kRef), 0, tt > tn ? tt : tn);
    }
  }
}

TEST_CASE("cuda elementwise: sizes around the vector width and the tail",
          "[cuda][ops][elementwise]") {
  for (std::int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 1000, 4099, 1 << 20})
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO("n " << n << " dtype " << dtype_name(dt));
      const Pair a = make(Layout::contiguous, {1, n}, 41, dt),
                 b = make(Layout::contiguous, {1, n}, 42, dt);
      require_close(add(a.dev, b.dev, kCuda), add(a.host, b.host, kRef), 1e-12, tol(dt));
      require_close(gelu(a.dev, kCuda), gelu(a.host, kRef), 1e-4, tol(dt));
      require_close(cast(a.dev, DType::bf16, kCuda), cast(a.host, DType::bf16, kRef), 0, 0);
    }
}

// The engine's tiled path (ew_tiled.cuh): an input whose unit-stride dim is
// the output's second-innermost one. Sizes that are not multiples of the
// 32 x 32 tile, batch dims, a transposed input flipped along its unit-stride
// dim (stride -1), a stride-0 partner, a strided output, every dtype (where,
// cast); a swapped tile index or a lost tail row fails these. [40, 9] is
// below the tiled path's 16-wide minimum: the strided kernel's case.
TEST_CASE("cuda elementwise: transposed inputs through the tiled path",
          "[cuda][ops][elementwise][tiled]") {
  for (const Shape& s :
       {Shape{33, 70}, Shape{64, 32}, Shape{130, 17}, Shape{3, 45, 67}, Shape{40, 9}})
    for (DType dt : kFloats) {
      const int r = static_cast<int>(s.size());
      INFO("shape rank " << r << " [.., " << s[r - 2] << ", " << s[r - 1] << "] dtype "
                         << dtype_name(dt));
      const double t = tol(dt);
      const Pair a = make(Layout::contiguous, s, 81, dt), bt = make(Layout::transposed, s, 82, dt);
      require_close(add(a.dev, bt.dev, kCuda), add(a.host, bt.host, kRef), 1e-12, t);
      require_close(sub(bt.dev, a.dev, kCuda), sub(bt.host, a.host, kRef), 1e-12, t);
      // Both inputs transposed, the second flipped along its unit-stride dim
      // (stride -1); a flipped along its outer dim.
      const Pair at = make(Layout::transposed, s, 83, dt);
      const Tensor bfh = bt.host.flip(r - 2), bfd = bt.dev.flip(r - 2);
      require_close(mul(at.dev, bfd, kCuda), mul(at.host, bfh, kRef), 1e-12, t);
      require_close(add(a.dev.flip(0), bfd, kCuda), add(a.host.flip(0), bfh, kRef), 1e-12, t);
      // A stride-0 row beside a transposed input.
      Shape rs = s;
      for (int d = 0; d < r - 1; ++d) rs[d] = 1;
      const Pair row = make(Layout::contiguous, rs, 84, dt);
      require_close(add(bt.dev, row.dev, kCuda), add(bt.host, row.host, kRef), 1e-12, t);
      // Unary (copy through the tile) and a strided, flipped output.
      require_close(neg(bt.dev, kCuda), neg(bt.host, kRef), 0, 0);
      const Tensor o = strided_out(s, dt);
      add_out(o, a.dev, bfd, kCuda);
      require_close(o, add(a.host, bfh, kRef), 1e-12, t);
    }
  // Every dtype: where with a transposed condition and operand, copy_ of a
  // transposed tensor into every dtype (ops allocate contiguous outputs, so
  // the transposed views are taken of [41, 37] tensors built on the host).
  const Shape s{37, 41};
  auto transposed = [](const Tensor& h) {
    return std::pair<Tensor, Tensor>{h.transpose(0, 1), h.to(kGpu).transpose(0, 1)};
  };
  const auto [cond_h, cond_d] = transposed(
      cast(relu(Tensor::randn({s[1], s[0]}, 85, DType::f64), kRef), DType::boolean, kRef));
  const DType all[] = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                       DType::boolean, DType::i32, DType::i64};
  for (DType dt : all) {
    INFO("dtype " << dtype_name(dt));
    const auto [ah, ad] =
        transposed(cast(mul(Tensor::randn({s[1], s[0]}, 86, DType::f64), 8.0, kRef), dt, kRef));
    const Tensor bh = cast(mul(Tensor::randn(s, 87, DType::f64), 8.0, kRef), dt, kRef);
    const Tensor bd = bh.to(kGpu);
    require_close(where(cond_d, ad, bd, kCuda), where(cond_h, ah, bh, kRef), 0, 0);
    require_close(where(cond_d, bd, ad, kCuda), where(cond_h, bh, ah, kRef), 0, 0);
    for (DType to : all) {
      INFO("copy_ to " << dtype_name(to));
      const Tensor o = Tensor::empty(s, to, kGpu);
      copy_(o, ad, kCuda);
      const double tt = to == DType::f16 || to == DType::bf16 ? tol(to) : 0;
      require_close(o, cast(ah, to, kRef), 0, tt);
    }
  }
}

TEST_CASE("cuda elementwise and rows: empty tensors", "[cuda][ops]") {
  const Tensor e = Tensor::empty({0, 5}, DType::f32, kGpu);
  CHECK(add(e, e, kCuda).numel() == 0);
  CHECK(exp(e, kCuda).numel() == 0);
  CHECK(softmax(e, 1, kCuda).numel() == 0);
  // A reduction over an empty dim: sum 0, mean NaN, one per row.
  const Tensor z = Tensor::empty({3, 0}, DType::f32, kGpu);
  require_close(sum(z, 1, false, kCuda), Tensor::zeros({3}, DType::f32), 0, 0);
  const auto m = mean(z, 1, false, kCuda).to(Device::cpu()).to_vector<double>();
  REQUIRE(m.size() == 3);
  for (double x : m) CHECK(std::isnan(x));
}

// Past 2^31 elements: the flat vector path (64-bit offsets) and the strided
// path (64-bit decode), checked where 32-bit indices would wrap: the last
// rows, written with distinct values, and a sample of the middle.
TEST_CASE("cuda elementwise: more than 2^31 elements (64-bit indices)", "[cuda][ops][large]") {
  const std::int64_t rows = 65537, cols = 32768;  // 2^31 + 32768 elements
  const std::int64_t n = rows * cols;
  Tensor a = Tensor::empty({rows, cols}, DType::bf16, kGpu);
  fill_(a, 1.0, kCuda);
  // Distinct values in the first and last 3 rows.
  const Tensor head = Tensor::randn({3, cols}, 51, DType::bf16);
  const Tensor tail = Tensor::randn({3, cols}, 52, DType::bf16);
  copy_(a.narrow(0, 0, 3), head.to(kGpu), kCuda);
  copy_(a.narrow(0, rows - 3, 3), tail.to(kGpu), kCuda);
  const Tensor row = Tensor::randn({cols}, 53, DType::bf16);
  SECTION("flat: a + a") {
    const Tensor c = add(a, a, kCuda);
    require_close(c.narrow(0, rows - 3, 3), add(tail, tail, kRef), 0, 0);
    require_close(c.narrow(0, 0, 3), add(head, head, kRef), 0, 0);
    const auto mid = c.narrow(0, rows / 2, 1).to(Device::cpu()).to_vector<double>();
    for (double x : mid) REQUIRE(x == 2.0);
  }
  SECTION("strided: a + a row broadcast") {
    const Tensor c = add(a, row.to(kGpu), kCuda);
    require_close(c.narrow(0, rows - 3, 3), add(tail, row, kRef), 0, tol(DType::bf16));
    require_close(c.narrow(0, 0, 3), add(head, row, kRef), 0, tol(DType::bf16));
    require_close(c.narrow(0, rows / 2, 1),
                  add(Tensor::full({1, cols}, 1.0, DType::bf16), row, kRef), 0, 0);
  }
  CHECK(n > (std::int64_t(1) << 31));
}

// ============================ rows =========================================

TEST_CASE("cuda rows: reductions and softmax vs reference on every layout", "[cuda][ops][rows]") {
  // Row lengths for the warp path (<= 1024), the block path with the row in
  // registers (<= 8192) and the re-reading path (> 8192).
  for (const Shape& s : {Shape{33, 100}, Shape{5, 3000}, Shape{3, 20000}})
    for (DType dt : kFloats)
      for (Layout l : kLayouts) {
        INFO("shape [" << s[0] << ", " << s[1] << "] dtype " << dtype_name(dt) << " layout "
                       << name(l));
        const Pair x = make(l, s, 61, dt);
        const double t = tol(dt) * (s[1] > 1000 ? 4 : 1);
        const double atol = dt == DType::f64 ? 1e-12 : tol(dt) * std::sqrt(double(s[1])) * 0.1;
        require_close(sum(x.dev, 1, false, kCuda), sum(x.host, 1, false, kRef), atol, t);
        require_close(mean(x.dev, 1, true, kCuda), mean(x.host, 1, true, kRef), atol, t);
        require_close(max(x.dev, 1, false, kCuda), max(x.host, 1, false, kRef), 0, 0);
        require_close(argmax(x.dev, 1, false, kCuda), argmax(x.host, 1, false, kRef), 0, 0);
        require_close(sum(x.dev, 0, false, kCuda), sum(x.host, 0, false, kRef), atol, t);
        require_close(softmax(x.dev, 1, kCuda), softmax(x.host, 1, kRef), 1e-7, t);
        require_close(log_softmax(x.dev, 1, kCuda), log_softmax(x.host, 1, kRef), t, t);
        require_close(softmax(x.dev, 0, kCuda), softmax(x.host, 0, kRef), 1e-7, t);
        const Tensor o = strided_out(s, dt);
        softmax_out(o, x.dev, 1, kCuda);
        require_close(o, softmax(x.host, 1, kRef), 1e-7, t);
      }
}

TEST_CASE("cuda rows: NaN and -inf rows, argmax ties", "[cuda][ops][rows]") {
  const double inf = INFINITY, nan = NAN;
  const Tensor h = Tensor::from_vector<double>(
      {1, 3, 3, 2, nan, 5, -inf, -inf, -inf, -inf, 0, 0, 4, 4, nan, 1}, {4, 4});
  const Tensor d = h.to(kGpu);
  require_close(argmax(d, 1, false, kCuda), argmax(h, 1, false, kRef), 0, 0);
  require_close(max(d, 1, false, kCuda), max(h, 1, false, kRef), 0, 0);
  require_close(softmax(d, 1, kCuda), softmax(h, 1, kRef), 1e-15, 1e-15);
  require_close(log_softmax(d, 1, kCuda), log_softmax(h, 1, kRef), 1e-15, 1e-15);
}

TEST_CASE("cuda rows: layer_norm and rms_norm vs reference on every layout", "[cuda][ops][rows]") {
  for (const Shape& s : {Shape{33, 64}, Shape{7, 1000}, Shape{5, 4096}, Shape{2, 10000}})
    for (DType dt : kFloats)
      for (Layout l : kLayouts) {
        INFO("shape [" << s[0] << ", " << s[1] << "] dtype " << dtype_name(dt) << " layout "
                       << name(l));
        const Pair x = make(l, s, 71, dt);
        const Pair w = make(Layout::contiguous, {1, s[1]}, 72, dt);
        const Pair b = make(Layout::strided_last, {1, s[1]}, 73, dt);
        const Tensor wh = w.host.squeeze(0), wd = w.dev.squeeze(0);
        const Tensor bh = b.host.squeeze(0), bd = b.dev.squeeze(0);
        const double t = tol(dt) * 2, atol = dt == DType::f64 ? 1e-12 : tol(dt);
        require_close(layer_norm(x.dev, wd, bd, 1e-5, kCuda),
                      layer_norm(x.host, wh, bh, 1e-5, kRef), atol, t);
        require_close(layer_norm(x.dev, Tensor(), Tensor(), 1e-5, kCuda),
                      layer_norm(x.host, Tensor(), Tensor(), 1e-5, kRef), atol, t);
        require_close(rms_norm(x.dev, wd, 1e-6, kCuda), rms_norm(x.host, wh, 1e-6, kRef), atol, t);
        const Tensor o = strided_out(s, dt);
        rms_norm_out(o, x.dev, Tensor(), 1e-6, kCuda);
        require_close(o, rms_norm(x.host, Tensor(), 1e-6, kRef), atol, t);
      }
}

// Many rows per block: the pipelined 16-bit fast path (rows_fast.cuh)
// stages each group's next rows through shared memory, which only happens
// when there are more rows than resident groups. Row lengths for the warp
// (512), 128- and 256-thread (1040, 4096) configurations; outer dims
// permuted so each staged row's offset is decoded from two dims; f32 takes
// the previous kernels on the same shapes. A row staged into the wrong slot
// or one stage too late fails these.
TEST_CASE("cuda rows: many rows per block (the staged fast path)", "[cuda][ops][rows]") {
  const struct {
    std::int64_t outer0, outer1, n;
  } cases[] = {{97, 131, 512}, {50, 53, 1040}, {13, 101, 4096}};
  for (const auto& c : cases)
    for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
      INFO("rows " << c.outer0 << " x " << c.outer1 << " n " << c.n << " dtype " << dtype_name(dt));
      // [outer1, outer0, n] viewed as [outer0, outer1, n]: rows unit-stride.
      const Tensor base = Tensor::randn({c.outer1, c.outer0, c.n}, 91, DType::f64).to(dt);
      const Tensor xh = base.transpose(0, 1), xd = base.to(kGpu).transpose(0, 1);
      const Tensor w = Tensor::randn({c.n}, 92, DType::f64).to(dt);
      const Tensor b = Tensor::randn({c.n}, 93, DType::f64).to(dt);
      const Tensor wd = w.to(kGpu), bd = b.to(kGpu);
      const double t = tol(dt) * 2, atol = tol(dt);
      require_close(layer_norm(xd, wd, bd, 1e-5, kCuda), layer_norm(xh, w, b, 1e-5, kRef), atol, t);
      require_close(rms_norm(xd, wd, 1e-6, kCuda), rms_norm(xh, w, 1e-6, kRef), atol, t);
      require_close(softmax(xd, 2, kCuda), softmax(xh, 2, kRef), 1e-7, t);
      require_close(log_softmax(xd, 2, kCuda), log_softmax(xh, 2, kRef), t, t);
    }
}

TEST_CASE("cuda rows: embedding vs reference; a bad id is an error, out untouched",
          "[cuda][ops][rows]") {
  const std::int64_t V = 50, D = 72;
  for (DType dt : kFloats)
    for (Layout l : {Layout::contiguous, Layout::transposed, Layout::strided_last}) {
      INFO("dtype " << dtype_name(dt) << " table layout " << name(l));
      const Pair table = make(l, {V, D}, 81, dt);
      const Tensor ids_h = Tensor::from_vector<std::int64_t>({3, 0, 49, 7, 7, 12}, {2, 3});
      const Tensor ids32 = Tensor::from_vector<std::int32_t>({3, 0, 49, 7, 7, 12}, {3, 2});
      require_close(embedding(ids_h.to(kGpu), table.dev, kCuda), embedding(ids_h, table.host, kRef),
                    0, 0);
      require_close(embedding(ids32.to(kGpu).transpose(0, 1), table.dev, kCuda),
                    embedding(ids32.transpose(0, 1), table.host, kRef), 0, 0);
      const Tensor o = strided_out({6, D}, dt);
      embedding_out(o, ids_h.reshape({6}).flip(0).to(kGpu), table.dev, kCuda);
      require_close(o, embedding(ids_h.reshape({6}).flip(0), table.host, kRef), 0, 0);
    }
  // Out of range: ids[4] == 50 (and ids[5] == -1): the first is named.
  const Tensor table = Tensor::randn({V, D}, 82, DType::f32).to(kGpu);
  const Tensor bad = Tensor::from_vector<std::int64_t>({1, 2, 3, 4, 50, -1}, {6}).to(kGpu);
  const Tensor out = Tensor::full({6, D}, 7.25, DType::f32).to(kGpu);
  const std::string msg = core_test::error_of([&] { embedding_out(out, bad, table, kCuda); });
  INFO(msg);
  CHECK(msg.find("embedding: ") == 0);
  CHECK(msg.find("ids holds 50 at index 4, outside [0, 50)") != std::string::npos);
  for (double x : out.to(Device::cpu()).to_vector<double>()) REQUIRE(x == 7.25);
  const Tensor neg = Tensor::from_vector<std::int32_t>({-3, 1}, {2}).to(kGpu);
  const std::string msg2 = core_test::error_of([&] { (void)embedding(neg, table, kCuda); });
  CHECK(msg2.find("ids holds -3 at index 0") != std::string::npos);
}

TEST_CASE("cuda rows: rotary vs reference (both styles, partial dims, in place)",
          "[cuda][ops][rows]") {
  for (DType dt : kFloats)
    for (Layout l : kLayouts)
      for (int style = 0; style < 2; ++style) {
        INFO("dtype " << dtype_name(dt) << " layout " << name(l) << " style " << style);
        const Shape s{2, 3, 17, 64};
        const Pair x = make(l, s, 91, dt);
        const Tensor pos_h = Tensor::from_vector<std::int64_t>(
            {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 40000}, {17});
        RotaryOptions ro;
        ro.theta = 10000.0;
        ro.rotary_dims = 48;
        ro.style = style ? RotaryStyle::interleaved : RotaryStyle::half;
        const double t = dt == DType::f32 ? 1e-5 : tol(dt) * 2;
        require_close(rotary(x.dev, pos_h.to(kGpu), ro, kCuda), rotary(x.host, pos_h, ro, kRef), t,
                      t);
        const Tensor pos32 = cast(pos_h, DType::i32, kRef);
        const Tensor y = x.dev.contiguous();
        rotary_out(y, y, pos32.to(kGpu), ro, kCuda);
        require_close(y, rotary(x.host, pos32, ro, kRef), t, t);
      }
}
