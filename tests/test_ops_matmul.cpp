// matmul and linear on the host backends: the reference against closed
// forms computed here, the cpu backend against the reference on every
// layout the kernels treat differently (row-major, transposed, offset
// window, negative strides, non-unit inner stride, broadcast batch, strided
// and transposed outputs), every floating dtype, shapes that reach Eigen's
// GEMM, GEMV, the batch-parallel loop and the skinny (decode) products split
// over threads, 1-D operands, linear with and without bias, bad input
// (message, and the caller's out untouched), and accumulate (out += a b +
// bias, [accumulate]) on both host backends against an independent f64 sum.
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "catch.hpp"
#include "matmul_test_util.hpp"
#include "strata/matmul.hpp"

using namespace strata;
using namespace matmul_test;  // Layout, make_view, on, require_close

namespace {

Tensor randn(const Shape& s, std::uint64_t seed, DType dt = DType::f32) {
  return Tensor::randn(s, seed, dt);
}

// a [batch..., M, K] @ b [batch..., K, N] on cpu vs reference, with a and b
// in layouts la and lb and out in layout lo (through matmul_out).
void cpu_vs_reference(const Shape& batch, std::int64_t M, std::int64_t K, std::int64_t N, Layout la,
                      Layout lb, Layout lo, DType dt, std::uint64_t seed) {
  Shape sa = batch, sb = batch, so = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  so.insert(so.end(), {M, N});
  INFO("a " << matmul_test::name(la) << " b " << matmul_test::name(lb) << " out "
            << matmul_test::name(lo) << " dtype " << dtype_name(dt) << " batch " << shape_str(batch)
            << " M " << M << " K " << K << " N " << N);
  const Tensor a = make_view(randn(sa, seed, dt), la, Device::cpu());
  const Tensor b = make_view(randn(sb, seed + 1, dt), lb, Device::cpu());
  const Tensor want = matmul(a, b, on("reference"));
  const Tensor out = make_view(Tensor::full(so, -7.0, dt), lo, Device::cpu());
  matmul_out(out, a, b, on("cpu"));
  require_close(out, want, K);
}

}  // namespace

TEST_CASE("matmul reference: closed forms", "[ops][matmul]") {
  // A known product: [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]].
  const Tensor a = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = Tensor::from_vector<double>({7, 8, 9, 10, 11, 12}, {3, 2});
  for (const char* be : {"reference", "cpu"}) {
    INFO(be);
    const Tensor c = matmul(a, b, on(be));
    REQUIRE(c.shape() == Shape{2, 2});
    CHECK(c.to_vector<double>() == std::vector<double>{58, 64, 139, 154});
    // The same through transposed views: (b^T a^T)^T = a b.
    const Tensor bt = b.transpose(0, 1).contiguous(), at = a.transpose(0, 1).contiguous();
    CHECK(matmul(bt, at, on(be)).transpose(0, 1).contiguous().to_vector<double>() ==
          std::vector<double>{58, 64, 139, 154});
  }
  // Identity: I @ x = x and x @ I = x exactly.
  const Tensor x = Tensor::randn({5, 5}, 3);
  Tensor eye = Tensor::zeros({5, 5});
  for (int i = 0; i < 5; ++i) eye.set_item({i, i}, 1.0);
  CHECK(matmul(eye, x, on("reference")).to_vector<float>() == x.to_vector<float>());
  CHECK(matmul(x, eye, on("reference")).to_vector<float>() == x.to_vector<float>());
  // K = 0: zeros, and linear gives the bias.
  const Tensor e0 = Tensor::empty({3, 0}), e1 = Tensor::empty({0, 4});
  for (const char* be : {"reference", "cpu"}) {
    INFO(be);
    const Tensor z = matmul(e0, e1, on(be));
    REQUIRE(z.shape() == Shape{3, 4});
    CHECK(z.to_vector<float>() == std::vector<float>(12, 0.0f));
    const Tensor bias = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
    const Tensor y = linear(e0, Tensor::empty({4, 0}), bias, on(be));
    REQUIRE(y.shape() == Shape{3, 4});
    CHECK(y.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
  }
  // Linear with a known weight and bias: y = x W^T + b.
  const Tensor xs = Tensor::from_vector<double>({1, 2}, {1, 2});
  const Tensor W = Tensor::from_vector<double>({1, 0, 0, 1, 1, 1}, {3, 2});
  const Tensor bb = Tensor::from_vector<double>({10, 20, 30}, {3});
  for (const char* be : {"reference", "cpu"}) {
    INFO(be);
    CHECK(linear(xs, W, bb, on(be)).to_vector<double>() == std::vector<double>{11, 22, 33});
    CHECK(linear(xs, W, Tensor(), on(be)).to_vector<double>() == std::vector<double>{1, 2, 3});
  }
}

TEST_CASE("matmul cpu vs reference: every layout of a and b", "[ops][matmul]") {
  matmul_test::sweep_input_layouts(cpu_vs_reference);
}

TEST_CASE("matmul cpu vs reference: output layouts", "[ops][matmul]") {
  matmul_test::sweep_output_layouts(cpu_vs_reference);
}

TEST_CASE("matmul cpu vs reference: dtypes and sizes (GEMM, GEMV, batch-parallel)",
          "[ops][matmul]") {
  std::uint64_t seed = 500;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    matmul_test::sweep_dtype_layouts(dt, seed, cpu_vs_reference);
    cpu_vs_reference({}, 70, 130, 90, Layout::contiguous, Layout::transposed, Layout::contiguous,
                     dt, seed += 2);  // Eigen's blocked GEMM
    cpu_vs_reference({}, 1, 300, 200, Layout::contiguous, Layout::contiguous, Layout::contiguous,
                     dt, seed += 2);  // GEMV (decode-like row)
    cpu_vs_reference({}, 200, 300, 1, Layout::transposed, Layout::contiguous, Layout::contiguous,
                     dt, seed += 2);  // GEMV (one column)
  }
  // Many small matrices (the batch-parallel loop), batch broadcast on one side.
  cpu_vs_reference({4, 8}, 6, 5, 7, Layout::contiguous, Layout::bcast_batch, Layout::transposed,
                   DType::f32, 900);
  cpu_vs_reference({4, 8}, 6, 5, 7, Layout::inner_step, Layout::neg_cols, Layout::sliced,
                   DType::bf16, 902);
  // A broadcast operand that must be packed (f16 always is; inner_step f32
  // too): one packed matrix serves every batch entry.
  cpu_vs_reference({3, 2}, 6, 5, 7, Layout::bcast_batch, Layout::contiguous, Layout::contiguous,
                   DType::f16, 904);
  cpu_vs_reference({3}, 40, 50, 30, Layout::contiguous, Layout::bcast_batch, Layout::neg_rows,
                   DType::f16, 906);
}

namespace {

// The OpenMP thread count for one scope (the cpu backend reads it per call).
struct ThreadCount {
  int before = omp_get_max_threads();
  explicit ThreadCount(int n) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(before); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;
};

}  // namespace

TEST_CASE("matmul cpu vs reference: skinny products split over threads (decode)", "[ops][matmul]") {
  // M <= 16 rows against a large b is cut into column slices, one per
  // thread, each (M <= 8) a matrix-vector product per row over column
  // blocks or (M 9 .. 16) one GEMM:
  // N = 1003 is no multiple of the slice width (16), of the block width or
  // of 3 or 5 threads, so the last slice and block are short. K = 96 makes
  // 5 slices worth it. One thread: the blocks without the slices.
  std::uint64_t seed = 1000;
  for (int threads : {1, 3, 5}) {
    ThreadCount tc(threads);
    INFO("threads " << threads);
    for (std::int64_t M : {1, 3, 8, 9, 16, 17})
      for (Layout lb : {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::neg_cols})
        cpu_vs_reference({}, M, 96, 1003, Layout::contiguous, lb, Layout::contiguous, DType::f32,
                         seed += 2);
    // Outputs Eigen writes in place (transposed, sliced) and one it cannot.
    for (Layout lo : {Layout::transposed, Layout::sliced, Layout::inner_step})
      cpu_vs_reference({}, 4, 96, 1003, Layout::transposed, Layout::transposed, lo, DType::f32,
                       seed += 2);
    // a with column stride 2: at M = 1 read in place (a strided row), else packed.
    for (std::int64_t M : {1, 5})
      cpu_vs_reference({}, M, 96, 1003, Layout::inner_step, Layout::transposed, Layout::neg_cols,
                       DType::f32, seed += 2);
    for (DType dt : {DType::f64, DType::f16, DType::bf16})
      cpu_vs_reference({}, 2, 96, 1003, Layout::contiguous, Layout::transposed, Layout::contiguous,
                       dt, seed += 2);
    // A batch too large a product for the batch-parallel loop: each entry split.
    cpu_vs_reference({2}, 1, 300, 1003, Layout::contiguous, Layout::bcast_batch, Layout::contiguous,
                     DType::f32, seed += 2);
  }
}

TEST_CASE("matmul cpu vs reference: larger products in tiles over threads", "[ops][matmul]") {
  // M > 16 rows: c is cut into a grid of row x column tiles, one GEMM per
  // tile, so each tile's offset into a, b and c matters in every layout.
  // 70 x 90 with K 50 is 315k multiply-adds: up to 6 tiles; 3, 5 and 7
  // threads give 1 x 3, 5 x 1 or 2 x 2 and 3 x 2 or 6 x 1 grids with short
  // last tiles (70 and 90 are no multiples of 8, 16 or the tile sides).
  std::uint64_t seed = 1050;
  for (int threads : {3, 5, 7}) {
    ThreadCount tc(threads);
    INFO("threads " << threads);
    for (Layout la : {Layout::contiguous, Layout::transposed, Layout::neg_rows})
      for (Layout lb : {Layout::contiguous, Layout::transposed})
        for (Layout lo : {Layout::contiguous, Layout::transposed, Layout::sliced})
          cpu_vs_reference({}, 70, 50, 90, la, lb, lo, DType::f32, seed += 2);
    cpu_vs_reference({}, 70, 50, 90, Layout::transposed, Layout::contiguous, Layout::transposed,
                     DType::f64, seed += 2);
    cpu_vs_reference({2}, 40, 50, 90, Layout::contiguous, Layout::bcast_batch, Layout::neg_rows,
                     DType::bf16, seed += 2);
  }
}

TEST_CASE("linear cpu vs reference: decode-shaped, split over threads", "[ops][matmul]") {
  // y [B, 1, out] = x [B, 1, in] W^T + bias: W [out, in] row-major reaches
  // the product as a transposed view; the batch folds into M = B rows.
  ThreadCount tc(3);
  std::uint64_t seed = 1100;
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dt));
    for (std::int64_t B : {1, 4}) {
      const Tensor x = Tensor::randn({B, 1, 200}, seed++, dt);
      const Tensor W = Tensor::randn({701, 200}, seed++, dt);
      const Tensor bias = Tensor::randn({701}, seed++, dt);
      require_close(linear(x, W, bias, on("cpu")), linear(x, W, bias, on("reference")), 200);
      require_close(linear(x, W, Tensor(), on("cpu")), linear(x, W, Tensor(), on("reference")),
                    200);
      // A strided bias and a weight stored [in, out] (a transposed view).
      const Tensor bias2 = Tensor::randn({1402}, seed++, dt).slice(0, 0, 1402, 2);
      const Tensor Wt = Tensor::randn({200, 701}, seed++, dt).transpose(0, 1);
      require_close(linear(x, Wt, bias2, on("cpu")), linear(x, Wt, bias2, on("reference")), 200);
      // Into a transposed out (in place for f32, with its bias filled first).
      Tensor y = Tensor::full({701, B}, 3.0, dt).transpose(0, 1);
      linear_out(y, x.reshape({B, 200}), W, bias, on("cpu"));
      require_close(y, linear(x.reshape({B, 200}), W, bias, on("reference")), 200);
    }
  }
}

TEST_CASE("matmul cpu vs reference: broadcast batch shapes", "[ops][matmul]") {
  // a [2, 1, M, K] @ b [3, K, N] -> [2, 3, M, N]; b 2-D against a batch.
  const Tensor a = Tensor::randn({2, 1, 4, 6}, 40);
  const Tensor b = Tensor::randn({3, 6, 5}, 41);
  const Tensor c = matmul(a, b, on("cpu"));
  REQUIRE(c.shape() == Shape{2, 3, 4, 5});
  require_close(c, matmul(a, b, on("reference")), 6);
  const Tensor b2 = Tensor::randn({6, 5}, 42).transpose(0, 1).contiguous().transpose(0, 1);
  require_close(matmul(a, b2, on("cpu")), matmul(a, b2, on("reference")), 6);
  // Each batch entry equals its own 2-D product.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      require_close(c.select(0, i).select(0, j),
                    matmul(a.select(0, i).select(0, 0), b.select(0, j), on("reference")), 6);
}

TEST_CASE("matmul: 1-D operands as in NumPy", "[ops][matmul]") {
  const Tensor v = Tensor::randn({6}, 50), w = Tensor::randn({6}, 51);
  const Tensor m = Tensor::randn({4, 6}, 52), mt = Tensor::randn({6, 3}, 53);
  const Tensor bat = Tensor::randn({2, 6, 3}, 54);
  for (const char* be : {"reference", "cpu"}) {
    INFO(be);
    const Tensor vv = matmul(v, w, on(be));  // dot product: 0-d
    REQUIRE(vv.dim() == 0);
    double dot = 0;
    for (int k = 0; k < 6; ++k) dot += v.item({k}) * w.item({k});
    CHECK(std::abs(vv.item({}) - dot) < 1e-5);
    const Tensor mv = matmul(m, v, on(be));  // [4]
    REQUIRE(mv.shape() == Shape{4});
    require_close(mv, matmul(m, v.unsqueeze(1), on("reference")).squeeze(1).contiguous(), 6);
    const Tensor vm = matmul(v, mt, on(be));  // [3]
    REQUIRE(vm.shape() == Shape{3});
    require_close(vm, matmul(v.unsqueeze(0), mt, on("reference")).squeeze(0).contiguous(), 6);
    const Tensor vb = matmul(v, bat, on(be));  // [2, 3]
    REQUIRE(vb.shape() == Shape{2, 3});
    require_close(vb, matmul(v.unsqueeze(0), bat, on("reference")).squeeze(1).contiguous(), 6);
    // A 1-D operand with a negative stride (a flipped view) is read in place.
    require_close(matmul(m, v.flip(0), on(be)), matmul(m, v.flip(0).contiguous(), on("reference")),
                  6);
    // matmul_out into a 1-D out.
    Tensor out = Tensor::full({4}, -1.0);
    matmul_out(out, m, v, on(be));
    require_close(out, mv, 6);
  }
}

TEST_CASE("linear cpu vs reference: with and without bias, every dtype", "[ops][matmul]") {
  std::uint64_t seed = 700;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    INFO(dtype_name(dt));
    const Tensor x = Tensor::randn({2, 3, 40}, seed++, dt);
    const Tensor W = Tensor::randn({24, 40}, seed++, dt);
    const Tensor bias = Tensor::randn({24}, seed++, dt);
    const Tensor with = linear(x, W, bias, on("cpu"));
    REQUIRE(with.shape() == Shape{2, 3, 24});
    require_close(with, linear(x, W, bias, on("reference")), 40);
    require_close(linear(x, W, Tensor(), on("cpu")), linear(x, W, Tensor(), on("reference")), 40);
    // Strided bias (every other element), transposed weight storage, 1-D x.
    const Tensor bias2 = Tensor::randn({48}, seed++, dt).slice(0, 0, 48, 2);
    const Tensor Wt = Tensor::randn({40, 24}, seed++, dt).transpose(0, 1);
    require_close(linear(x, Wt, bias2, on("cpu")), linear(x, Wt, bias2, on("reference")), 40);
    const Tensor x1 = x.select(0, 1).select(0, 2);
    const Tensor y1 = linear(x1, W, bias, on("cpu"));
    REQUIRE(y1.shape() == Shape{24});
    require_close(y1, linear(x1, W, bias, on("reference")), 40);
    // linear_out into a transposed y (the bias goes with the temporary path).
    Tensor y = Tensor::full({24, 6}, 3.0, dt).transpose(0, 1);
    linear_out(y, x.reshape({6, 40}), W, bias, on("cpu"));
    require_close(y, linear(x.reshape({6, 40}), W, bias, on("reference")), 40);
  }
  // linear == matmul(x, W^T) + bias, on the reference.
  const Tensor x = Tensor::randn({5, 8}, 800, DType::f64),
               W = Tensor::randn({3, 8}, 801, DType::f64);
  const Tensor b = Tensor::from_vector<double>({1, -2, 3}, {3});
  const Tensor y = linear(x, W, b, on("reference"));
  const Tensor p = matmul(x, W.transpose(0, 1), on("reference"));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j)
      CHECK(std::abs(y.item({i, j}) - p.item({i, j}) - b.item({j})) < 1e-12);
}

TEST_CASE("matmul and linear: bad input is an error naming op, argument and value",
          "[ops][matmul]") {
  // Every check leaves the caller's sentinel-filled out untouched.
  const Tensor a = Tensor::randn({4, 5}, 60), b6 = Tensor::randn({6, 3}, 61);
  Tensor out = Tensor::full({4, 3}, 42.0);
  auto untouched = [&]() {
    for (float v : out.to_vector<float>()) REQUIRE(v == 42.0f);
  };
  auto require_error = [&](auto&& f, const std::string& msg) {
    bool threw = false;
    try {
      f();
    } catch (const Error& e) {
      threw = true;
      CHECK(std::string(e.what()) == msg);
    }
    CHECK(threw);
    untouched();
  };
  for (const char* be : {"reference", "cpu"}) {
    INFO(be);
    require_error([&] { matmul_out(out, a, b6, on(be)); },
                  "matmul: a has K = 5 (last dim) but b has 6 rows (dim -2)");
    require_error([&] { matmul_out(out, a, Tensor::randn({6}, 1), on(be)); },
                  "matmul: a has K = 5 (last dim) but b has 6 elements (1-D)");
    require_error(
        [&] {
          matmul_out(out, a, Tensor::randn({5, 3}, 1, DType::f64), on(be));
        },
        "matmul: b has dtype f64 but a has f32");
    require_error(
        [&] {
          matmul_out(out, a, Tensor::randn({5, 2}, 1), on(be));
        },
        "matmul: out has shape [4, 3] but must be [4, 2]");
    require_error(
        [&] {
          matmul_out(out.to(DType::f64), a, Tensor::randn({5, 3}, 1), on(be));
        },
        "matmul: out has dtype f64 but must be f32 (from the inputs)");
    // out overlapping an input: a view of a's own storage.
    const Tensor big = Tensor::randn({4, 8}, 62);
    require_error(
        [&] {
          matmul_out(big.slice(1, 5, 8), big.slice(1, 0, 5), Tensor::randn({5, 3}, 1), on(be));
        },
        "matmul: out overlaps input a in memory; an output may only be exactly one of its inputs "
        "(in place) or disjoint from them");
    require_error([&] { matmul_out(out, Tensor::full({}, 1.0), b6, on(be)); },
                  "matmul: a must have at least 1 dims but has shape []");
    require_error(
        [&] {
          matmul_out(out, Tensor::randn({2, 4, 5}, 1), Tensor::randn({3, 5, 3}, 1), on(be));
        },
        "matmul: a has batch dims [2] and b has batch dims [3], which do not broadcast");
    require_error(
        [&] {
          linear_out(out, a, Tensor::randn({3, 6}, 1), Tensor(), on(be));
        },
        "linear: x has 5 features (last dim) but weight has 6 columns (dim 1, in)");
    require_error(
        [&] {
          linear_out(out, a, Tensor::randn({3, 5}, 1), Tensor::randn({4}, 1), on(be));
        },
        "linear: bias has shape [4] but must be [3] (weight's rows)");
    require_error(
        [&] {
          linear_out(out, a, Tensor::randn({3, 5}, 1).select(0, 0), Tensor(), on(be));
        },
        "linear: weight has shape [5] but must be 2-D [out, in]");
    require_error(
        [&] {
          matmul_out(out, Tensor::zeros({4, 5}, DType::i32), b6, on(be));
        },
        "matmul: a has dtype i32 but must be a floating type (f32, f64, f16 or bf16)");
    // The caller's out with overlapping elements (stride 0).
    require_error(
        [&] {
          matmul_out(Tensor::zeros({3}).expand({4, 3}), a, Tensor::randn({5, 3}, 1), on(be));
        },
        "matmul: out has strides [0, 1] under which several elements share memory");
  }
}

// ---- accumulate: out += a b (+ bias), BLAS beta = 1 ------------------------------

namespace {

// What out holds after an accumulate call, computed apart from the kernels:
// the product of the f64 inputs on the reference, plus the previous out and
// the bias added here in f64, rounded once to dt.
Tensor accumulated(const Tensor& prev, const Tensor& a, const Tensor& b, const Tensor& bias,
                   DType dt) {
  const Tensor p = matmul(a.to(DType::f64), b.to(DType::f64), on("reference"));
  REQUIRE(p.shape() == prev.shape());
  const std::vector<double> pv = p.to_vector<double>(), ov = prev.to_vector<double>();
  const std::vector<double> bv = bias.defined() ? bias.to_vector<double>() : std::vector<double>();
  const std::size_t n = bias.defined() ? bv.size() : 1;
  std::vector<double> w(pv.size());
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = ov[i] + pv[i] + (bias.defined() ? bv[i % n] : 0.0);
  return Tensor::from_vector<double>(w, prev.shape()).to(dt);
}

// out (layout lo, random values) += a [batch..., M, K] (la) @ b (lb) on
// `backend` through matmul_out, or with `bias` through linear_out (weight =
// b^T as a view, b without batch dims, bias [N] random), against
// accumulated().
void accumulate_case(const char* backend, const Shape& batch, std::int64_t M, std::int64_t K,
                     std::int64_t N, Layout la, Layout lb, Layout lo, DType dt, std::uint64_t seed,
                     bool bias = false, bool strided_bias = false) {
  Shape sa = batch, sb = bias ? Shape{} : batch, so = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  so.insert(so.end(), {M, N});
  INFO("accumulate on " << backend << ": a " << matmul_test::name(la) << " b "
                        << matmul_test::name(lb) << " out " << matmul_test::name(lo) << " dtype "
                        << dtype_name(dt) << " batch " << shape_str(batch) << " M " << M << " K "
                        << K << " N " << N << " bias " << bias << " strided bias " << strided_bias);
  const Tensor va = randn(sa, seed, dt), vb = randn(sb, seed + 1, dt), vo = randn(so, seed + 2, dt);
  const Tensor a = make_view(va, la, Device::cpu()), b = make_view(vb, lb, Device::cpu());
  const Tensor out = make_view(vo, lo, Device::cpu());
  MatmulOptions opt = on(backend);
  opt.accumulate = true;
  Tensor vbias;
  if (bias) {
    vbias = strided_bias ? randn({2 * N}, seed + 3, dt).slice(0, 0, 2 * N, 2)
                         : randn({N}, seed + 3, dt);
    linear_out(out, a, b.transpose(0, 1), vbias, opt);
  } else {
    matmul_out(out, a, b, opt);
  }
  require_close(out, accumulated(vo, a, b, vbias, dt), K);  // a, b: the views' values
}

}  // namespace

TEST_CASE("matmul accumulate: closed forms", "[ops][matmul][accumulate]") {
  const Tensor a = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = Tensor::from_vector<double>({7, 8, 9, 10, 11, 12}, {3, 2});
  const Tensor xs = Tensor::from_vector<double>({1, 2}, {1, 2});
  const Tensor W = Tensor::from_vector<double>({1, 0, 0, 1, 1, 1}, {3, 2});
  const Tensor bb = Tensor::from_vector<double>({10, 20, 30}, {3});
  for (const char* be : {"reference", "cpu"}) {
    INFO(be);
    MatmulOptions opt = on(be);
    opt.accumulate = true;
    Tensor out = Tensor::from_vector<double>({1, -1, 0.5, 100}, {2, 2});
    matmul_out(out, a, b, opt);
    CHECK(out.to_vector<double>() == std::vector<double>{59, 63, 139.5, 254});
    matmul_out(out, a, b, opt);  // twice: prev + 2 a b
    CHECK(out.to_vector<double>() == std::vector<double>{117, 127, 278.5, 408});
    // Without accumulate the same out is overwritten.
    matmul_out(out, a, b, on(be));
    CHECK(out.to_vector<double>() == std::vector<double>{58, 64, 139, 154});
    // linear: y += x W^T + bias, the bias added once.
    Tensor y = Tensor::from_vector<double>({100, 200, 300}, {1, 3});
    linear_out(y, xs, W, bb, opt);
    CHECK(y.to_vector<double>() == std::vector<double>{111, 222, 333});
    linear_out(y, xs, W, Tensor(), opt);
    CHECK(y.to_vector<double>() == std::vector<double>{112, 224, 336});
    // A transposed out (written in place by the cpu GEMM), with and without bias.
    Tensor yt = Tensor::from_vector<double>({1, 2, 3}, {3, 1}).transpose(0, 1);
    linear_out(yt, xs, W, bb, opt);
    CHECK(yt.contiguous().to_vector<double>() == std::vector<double>{12, 24, 36});
    // K = 0: out += bias, or out unchanged.
    Tensor z = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    MatmulOptions of = opt;
    matmul_out(z, Tensor::empty({2, 0}), Tensor::empty({0, 3}), of);
    CHECK(z.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
    linear_out(z, Tensor::empty({2, 0}), Tensor::empty({3, 0}),
               Tensor::from_vector<float>({10, 20, 30}, {3}), of);
    CHECK(z.to_vector<float>() == std::vector<float>{11, 22, 33, 14, 25, 36});
    // 1-D operands: a dot product into a 0-d out, a matrix-vector product.
    Tensor d = Tensor::from_vector<double>({5}, {});
    matmul_out(d, Tensor::from_vector<double>({1, 2}, {2}),
               Tensor::from_vector<double>({3, 4}, {2}), opt);
    CHECK(d.item({}) == 16.0);
    Tensor mv = Tensor::from_vector<double>({1, 1}, {2});
    matmul_out(mv, a, Tensor::from_vector<double>({1, 0, -1}, {3}), opt);
    CHECK(mv.to_vector<double>() == std::vector<double>{-1, -1});
  }
}

TEST_CASE("matmul accumulate vs an independent sum: every backend, dtype and cpu path",
          "[ops][matmul][accumulate]") {
  std::uint64_t seed = 2000;
  for (const char* be : {"reference", "cpu"}) {
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      // Outputs the cpu GEMM writes in place (contiguous, transposed,
      // sliced) and ones through the staging copy (negative strides, inner
      // step); f16/bf16 always stage.
      for (Layout lo : {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::neg_rows,
                        Layout::inner_step})
        accumulate_case(be, {2}, 9, 33, 7, Layout::transposed, Layout::contiguous, lo, dt,
                        seed += 4);
      // Eigen's blocked GEMM, GEMV (one row, one column).
      accumulate_case(be, {}, 70, 130, 90, Layout::contiguous, Layout::transposed,
                      Layout::contiguous, dt, seed += 4);
      accumulate_case(be, {}, 1, 300, 200, Layout::contiguous, Layout::contiguous,
                      Layout::transposed, dt, seed += 4);
      accumulate_case(be, {}, 200, 300, 1, Layout::transposed, Layout::contiguous,
                      Layout::contiguous, dt, seed += 4);
      // Batches: the batch-parallel loop over many small products, b
      // broadcast; two batch dims into a transposed out.
      accumulate_case(be, {4, 8}, 6, 5, 7, Layout::contiguous, Layout::bcast_batch,
                      Layout::transposed, dt, seed += 4);
      accumulate_case(be, {3, 2}, 6, 5, 7, Layout::neg_rows, Layout::inner_step, Layout::sliced, dt,
                      seed += 4);
      // linear with a bias: in place (bias added to out first) and staged,
      // a strided bias, the batch folded into the rows.
      for (Layout lo : {Layout::contiguous, Layout::transposed, Layout::neg_cols})
        accumulate_case(be, {2}, 5, 40, 24, Layout::contiguous, Layout::transposed, lo, dt,
                        seed += 4, true);
      accumulate_case(be, {3}, 4, 40, 24, Layout::sliced, Layout::contiguous, Layout::contiguous,
                      dt, seed += 4, true, true);
      // K = 0 with a bias through linear_out: out += bias.
      accumulate_case(be, {2}, 3, 0, 5, Layout::contiguous, Layout::contiguous, Layout::transposed,
                      dt, seed += 4, true);
      accumulate_case(be, {2}, 3, 0, 5, Layout::contiguous, Layout::contiguous, Layout::neg_rows,
                      dt, seed += 4);
    }
  }
}

TEST_CASE("matmul accumulate: skinny (decode) products split over threads",
          "[ops][matmul][accumulate]") {
  // The residual stream's x += o_proj(h): M <= 16 rows, column slices per
  // thread, matrix-vector products per row (M <= 8) or a GEMM per slice.
  std::uint64_t seed = 2600;
  for (int threads : {1, 3}) {
    ThreadCount tc(threads);
    INFO("threads " << threads);
    for (std::int64_t M : {1, 4, 12})
      for (DType dt : {DType::f32, DType::bf16}) {
        accumulate_case("cpu", {}, M, 96, 1003, Layout::contiguous, Layout::transposed,
                        Layout::contiguous, dt, seed += 4);
        accumulate_case("cpu", {}, M, 96, 1003, Layout::contiguous, Layout::contiguous,
                        Layout::transposed, dt, seed += 4, true);
      }
    accumulate_case("cpu", {2}, 1, 300, 1003, Layout::contiguous, Layout::transposed,
                    Layout::contiguous, DType::f64, seed += 4, true);
    accumulate_case("cpu", {2}, 1, 300, 1003, Layout::contiguous, Layout::bcast_batch,
                    Layout::sliced, DType::f16, seed += 4);
  }
}

TEST_CASE("matmul accumulate: bad input", "[ops][matmul][accumulate]") {
  const Tensor a = Tensor::randn({4, 4}, 70), b = Tensor::randn({4, 4}, 71);
  const Tensor w = Tensor::randn({4, 4}, 72), bias = Tensor::randn({4}, 73);
  for (const char* be : {"reference", "cpu"}) {
    INFO(be);
    MatmulOptions opt = on(be);
    opt.accumulate = true;
    auto message = [](auto&& f) {
      try {
        f();
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    // The allocating forms have no out to add into.
    CHECK(message([&] { (void)matmul(a, b, opt); }) ==
          "matmul: accumulate = true needs an output to add into; use matmul_out");
    CHECK(message([&] { (void)linear(a, w, bias, opt); }) ==
          "linear: accumulate = true needs an output to add into; use linear_out");
    // out exactly an input (x += x W^T) is an overlap, not in place.
    const Tensor x = Tensor::randn({4, 4}, 74);
    const std::vector<float> before = x.to_vector<float>();
    CHECK(message([&] { matmul_out(x, x, b, opt); }) ==
          "matmul: out overlaps input a in memory; an output may only be exactly one of its inputs "
          "(in place) or disjoint from them");
    CHECK(message([&] { linear_out(x, a, x, Tensor(), opt); }) ==
          "linear: y overlaps input weight in memory; an output may only be exactly one of its "
          "inputs (in place) or disjoint from them");
    CHECK(message([&] { linear_out(x.select(0, 0), a.select(0, 1), w, x.select(0, 0), opt); }) ==
          "linear: y overlaps input bias in memory; an output may only be exactly one of its "
          "inputs (in place) or disjoint from them");
    CHECK(x.to_vector<float>() == before);
  }
}
