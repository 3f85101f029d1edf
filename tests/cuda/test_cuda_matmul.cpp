// matmul and linear on the cuda backend (cuBLAS / cuBLASLt) against the
// reference backend on the host, on the same values in the same layouts:
// every input layout (the ones cuBLAS takes as transpose flags and the ones
// copied first), output layouts (row-major, column-major, through a
// temporary), uniform and pointer-array batches, every dtype, precision
// medium (TF32) with its tolerance, linear's bias through the cuBLASLt
// epilogue and through the fill + beta=1 path, K = 0, 1-D operands, an
// error raised before anything is written, and accumulate (out += a b +
// bias: beta = 1 on every path, [accumulate]). The binary skips without a
// GPU.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "matmul_test_util.hpp"
#include "strata/matmul.hpp"

using namespace strata;
using namespace matmul_test;  // Layout, make_view, on, require_close

namespace {

const Device kGpu = Device::cuda(0);

void cuda_vs_reference(const Shape& batch, std::int64_t M, std::int64_t K, std::int64_t N,
                       Layout la, Layout lb, Layout lo, DType dt, std::uint64_t seed,
                       Precision p = Precision::highest, bool bias = false) {
  // linear's weight is 2-D: with a bias, b has no batch dims.
  Shape sa = batch, sb = bias ? Shape{} : batch, so = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  so.insert(so.end(), {M, N});
  INFO("a " << matmul_test::name(la) << " b " << matmul_test::name(lb) << " out "
            << matmul_test::name(lo) << " dtype " << dtype_name(dt) << " batch " << shape_str(batch)
            << " M " << M << " K " << K << " N " << N << " bias " << bias << " precision "
            << int(p));
  const Tensor va = Tensor::randn(sa, seed, dt), vb = Tensor::randn(sb, seed + 1, dt);
  const Tensor a = make_view(va, la, Device::cpu()), b = make_view(vb, lb, Device::cpu());
  const Tensor ga = make_view(va, la, kGpu), gb = make_view(vb, lb, kGpu);
  const Tensor out = make_view(Tensor::full(so, -7.0, dt), lo, kGpu);
  if (!bias) {
    const Tensor want = matmul(a, b, on("reference"));
    matmul_out(out, ga, gb, on("cuda", p));
    require_close(out, want, K, p);
    return;
  }
  // linear: weight = b^T as a view ([N, K]); bias [N].
  const Tensor vbias = Tensor::randn({N}, seed + 2, dt);
  const Tensor want = linear(a, b.transpose(0, 1), vbias, on("reference"));
  linear_out(out, ga, gb.transpose(0, 1), vbias.to(kGpu), on("cuda", p));
  require_close(out, want, K, p);
}

// cuda_vs_reference at its default precision, without a bias: the shared
// sweeps' check.
const auto kCudaVsReference = [](const Shape& batch, std::int64_t M, std::int64_t K, std::int64_t N,
                                 Layout la, Layout lb, Layout lo, DType dt, std::uint64_t seed) {
  cuda_vs_reference(batch, M, K, N, la, lb, lo, dt, seed);
};

}  // namespace

TEST_CASE("cuda matmul vs reference: every layout of a and b", "[cuda][matmul]") {
  matmul_test::sweep_input_layouts(kCudaVsReference);
}

TEST_CASE("cuda matmul vs reference: output layouts and batches", "[cuda][matmul]") {
  matmul_test::sweep_output_layouts(kCudaVsReference);
  // Two batch dims that do not merge (b broadcast over the first): the
  // pointer-array path; and a broadcast b over one dim (stride 0, uniform).
  cuda_vs_reference({4, 3}, 6, 5, 7, Layout::contiguous, Layout::bcast_batch, Layout::contiguous,
                    DType::f32, 400);
  cuda_vs_reference({5}, 6, 5, 7, Layout::contiguous, Layout::bcast_batch, Layout::transposed,
                    DType::f32, 402);
  cuda_vs_reference({2, 3}, 6, 5, 7, Layout::sliced, Layout::transposed, Layout::sliced, DType::f32,
                    404);
  // Batch dims in swapped order (a [3, 2, M, K] stored, seen as [2, 3, M, K]):
  // no single batch stride, so cuBLAS gets pointer arrays.
  {
    const Tensor va = Tensor::randn({3, 2, 6, 5}, 410), vb = Tensor::randn({2, 3, 5, 7}, 411);
    const Tensor ha = va.transpose(0, 1), ga = va.to(kGpu).transpose(0, 1);
    require_close(matmul(ga, vb.to(kGpu), on("cuda")), matmul(ha, vb, on("reference")), 5);
    require_close(matmul(ga, vb.to(kGpu), on("cuda", Precision::medium)),
                  matmul(ha, vb, on("reference")), 5, Precision::medium);
    const Tensor bias = Tensor::randn({7}, 412);
    require_close(linear(ga, vb.select(0, 0).select(0, 0).transpose(0, 1).to(kGpu), bias.to(kGpu),
                         on("cuda")),
                  linear(ha, vb.select(0, 0).select(0, 0).transpose(0, 1), bias, on("reference")),
                  5);
  }
  // A broadcast batch of b (a [2, 1, M, K] against b [3, K, N]).
  const Tensor a = Tensor::randn({2, 1, 4, 6}, 40), b = Tensor::randn({3, 6, 5}, 41);
  require_close(matmul(a.to(kGpu), b.to(kGpu), on("cuda")), matmul(a, b, on("reference")), 6);
}

TEST_CASE("cuda matmul vs reference: dtypes, sizes, precision medium (TF32)", "[cuda][matmul]") {
  std::uint64_t seed = 500;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    matmul_test::sweep_dtype_layouts(dt, seed, kCudaVsReference);
    cuda_vs_reference({}, 130, 257, 90, Layout::contiguous, Layout::transposed, Layout::contiguous,
                      dt, seed += 2);
    cuda_vs_reference({}, 1, 512, 300, Layout::contiguous, Layout::contiguous, Layout::contiguous,
                      dt, seed += 2);
  }
  for (Precision p : {Precision::medium, Precision::high}) {
    cuda_vs_reference({}, 128, 1024, 96, Layout::contiguous, Layout::contiguous, Layout::contiguous,
                      DType::f32, seed += 2, p);
    cuda_vs_reference({3}, 64, 200, 64, Layout::transposed, Layout::contiguous, Layout::contiguous,
                      DType::f32, seed += 2, p);
  }
}

// M <= 8 with a's rows and b's columns unit-stride (a decode step's
// projections): every row count, odd and aligned K, bias, out layouts,
// against the reference.
TEST_CASE("cuda matmul: skinny products (M <= 8) vs reference", "[cuda][matmul][skinny]") {
  std::uint64_t seed = 3000;
  const std::pair<std::int64_t, std::int64_t> kn[] = {
      {512, 768}, {1408, 512}, {7, 33}, {520, 24}, {64, 1}};
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (std::int64_t M : {1, 3, 8})
      for (const auto& [K, N] : kn)
        for (bool bias : {false, true})
          cuda_vs_reference({}, M, K, N, Layout::contiguous, Layout::transposed, Layout::contiguous,
                            dt, seed += 3, Precision::highest, bias);
  for (DType dt : {DType::f32, DType::bf16}) {
    // a a window of a wider buffer (row stride > K), out column-major or flipped.
    cuda_vs_reference({}, 4, 100, 40, Layout::sliced, Layout::transposed, Layout::transposed, dt,
                      seed += 3, Precision::highest, true);
    cuda_vs_reference({}, 2, 64, 40, Layout::contiguous, Layout::transposed, Layout::neg_rows, dt,
                      seed += 3);
    // 9 rows.
    cuda_vs_reference({}, 9, 64, 40, Layout::contiguous, Layout::transposed, Layout::contiguous, dt,
                      seed += 3, Precision::highest, true);
  }
}

TEST_CASE("cuda linear vs reference: bias through the epilogue and the fill", "[cuda][matmul]") {
  std::uint64_t seed = 700;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    // Row-major out, contiguous bias: cuBLASLt's epilogue (not f64).
    cuda_vs_reference({2}, 16, 64, 40, Layout::contiguous, Layout::transposed, Layout::contiguous,
                      dt, seed += 3, Precision::highest, true);
    cuda_vs_reference({}, 1, 512, 96, Layout::contiguous, Layout::transposed, Layout::contiguous,
                      dt, seed += 3, Precision::highest, true);
    // Column-major out and a temporary out: bias filled, beta = 1.
    cuda_vs_reference({}, 16, 64, 40, Layout::contiguous, Layout::contiguous, Layout::transposed,
                      dt, seed += 3, Precision::highest, true);
    cuda_vs_reference({2}, 16, 64, 40, Layout::inner_step, Layout::contiguous, Layout::inner_step,
                      dt, seed += 3, Precision::highest, true);
  }
  cuda_vs_reference({}, 32, 300, 48, Layout::contiguous, Layout::transposed, Layout::contiguous,
                    DType::f32, seed += 3, Precision::medium, true);
  // A strided bias (not the epilogue), 1-D x.
  const Tensor x = Tensor::randn({40}, 790), W = Tensor::randn({24, 40}, 791);
  const Tensor bias = Tensor::randn({48}, 792).slice(0, 0, 48, 2);
  require_close(linear(x.to(kGpu), W.to(kGpu), bias.to(kGpu), on("cuda")),
                linear(x, W, bias, on("reference")), 40);
}

TEST_CASE("cuda matmul: K = 0, 1-D operands, errors before writing", "[cuda][matmul]") {
  const Tensor z = matmul(Tensor::empty({3, 0}, DType::f32, kGpu),
                          Tensor::empty({0, 4}, DType::f32, kGpu), on("cuda"));
  CHECK(z.to_vector<float>() == std::vector<float>(12, 0.0f));
  const Tensor bias = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, kGpu);
  const Tensor y = linear(Tensor::empty({3, 0}, DType::f32, kGpu),
                          Tensor::empty({4, 0}, DType::f32, kGpu), bias, on("cuda"));
  CHECK(y.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});

  const Tensor v = Tensor::randn({6}, 50), m = Tensor::randn({4, 6}, 52);
  require_close(matmul(m.to(kGpu), v.to(kGpu), on("cuda")), matmul(m, v, on("reference")), 6);
  require_close(matmul(v.to(kGpu), m.transpose(0, 1).to(kGpu), on("cuda")),
                matmul(v, m.transpose(0, 1), on("reference")), 6);
  const Tensor dot = matmul(v.to(kGpu), v.to(kGpu), on("cuda"));
  CHECK(std::abs(dot.item({}) - matmul(v, v, on("reference")).item({})) < 1e-4);

  Tensor out = Tensor::full({4, 3}, 42.0, DType::f32, kGpu);
  try {
    matmul_out(out, Tensor::randn({4, 5}, 1).to(kGpu), Tensor::randn({6, 3}, 2).to(kGpu),
               on("cuda"));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "matmul: a has K = 5 (last dim) but b has 6 rows (dim -2)");
  }
  try {
    matmul_out(out, Tensor::randn({4, 5}, 1).to(kGpu), Tensor::randn({5, 3}, 2), on("cuda"));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "matmul: b is on cpu but a is on cuda:0");
  }
  for (float f : out.to_vector<float>()) REQUIRE(f == 42.0f);
}

// ---- accumulate: out += a b (+ bias), beta = 1 with C = D = out -------------------

namespace {

// out (layout lo on the GPU, random values) += a b (+ bias) on cuda,
// against the f64 product on the reference plus the previous out and the
// bias, added on the host in f64 and rounded once to dt.
void cuda_accumulate(const Shape& batch, std::int64_t M, std::int64_t K, std::int64_t N, Layout la,
                     Layout lb, Layout lo, DType dt, std::uint64_t seed,
                     Precision p = Precision::highest, bool bias = false,
                     bool strided_bias = false) {
  Shape sa = batch, sb = bias ? Shape{} : batch, so = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  so.insert(so.end(), {M, N});
  INFO("accumulate: a " << matmul_test::name(la) << " b " << matmul_test::name(lb) << " out "
                        << matmul_test::name(lo) << " dtype " << dtype_name(dt) << " batch "
                        << shape_str(batch) << " M " << M << " K " << K << " N " << N << " bias "
                        << bias << " strided bias " << strided_bias << " precision " << int(p));
  const Tensor va = Tensor::randn(sa, seed, dt), vb = Tensor::randn(sb, seed + 1, dt);
  const Tensor vo = Tensor::randn(so, seed + 2, dt);
  const Tensor ga = make_view(va, la, kGpu), gb = make_view(vb, lb, kGpu);
  const Tensor out = make_view(vo, lo, kGpu);
  MatmulOptions opt = on("cuda", p);
  opt.accumulate = true;
  Tensor vbias;
  if (bias) {
    // A strided bias: every other element of a buffer on the GPU.
    const Tensor vb2 = Tensor::randn({strided_bias ? 2 * N : N}, seed + 3, dt);
    const int step = strided_bias ? 2 : 1;
    vbias = vb2.slice(0, 0, vb2.size(0), step);
    const Tensor gbias = vb2.to(kGpu).slice(0, 0, vb2.size(0), step);
    linear_out(out, ga, gb.transpose(0, 1), gbias, opt);
  } else {
    matmul_out(out, ga, gb, opt);
  }
  // The product of the values the views hold (bcast_batch repeats the first matrix).
  const Tensor ha = make_view(va, la, Device::cpu()), hb = make_view(vb, lb, Device::cpu());
  const Tensor prod = matmul(ha.to(DType::f64), hb.to(DType::f64), on("reference"));
  const std::vector<double> pv = prod.to_vector<double>(), ov = vo.to_vector<double>();
  const std::vector<double> bv = bias ? vbias.to_vector<double>() : std::vector<double>();
  std::vector<double> w(pv.size());
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = ov[i] + pv[i] + (bias ? bv[i % static_cast<std::size_t>(N)] : 0.0);
  if (bias && (dt == DType::f16 || dt == DType::bf16)) {
    // Documented (docs/guide/matmul.md, "Accumulate"): f16/bf16 with a bias may
    // round twice on cuda -- once where a b + bias or out + bias meets the
    // output type, once at the end -- so the bound adds one rounding of the
    // larger intermediate to require_close's.
    const double u = dt == DType::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    const double floor = 16.0 * (matmul_test::input_unit(dt, p) * std::sqrt(double(K)) +
                                 matmul_test::acc_unit(dt) * double(K));
    const std::vector<double> g = out.to_vector<double>();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double b_i = bv[i % static_cast<std::size_t>(N)];
      const double mid = std::max(std::abs(ov[i] + b_i), std::abs(pv[i] + b_i));
      const double tol = u * (std::abs(w[i]) + mid) + floor;
      if (!(std::abs(g[i] - w[i]) <= tol)) ++bad;
    }
    CHECK(bad == 0);
    return;
  }
  require_close(out, Tensor::from_vector<double>(w, so).to(dt), K, p);
}

}  // namespace

TEST_CASE("cuda matmul accumulate vs an independent sum", "[cuda][matmul][accumulate]") {
  std::uint64_t seed = 2000;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    // Row-major out (out^T = b^T a^T), column-major out, through a temporary
    // (copied in first); uniform batch.
    for (Layout lo : {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::neg_rows,
                      Layout::inner_step})
      cuda_accumulate({2}, 9, 33, 7, Layout::transposed, Layout::contiguous, lo, dt, seed += 4);
    cuda_accumulate({}, 130, 257, 90, Layout::contiguous, Layout::transposed, Layout::contiguous,
                    dt, seed += 4);
    cuda_accumulate({}, 1, 512, 300, Layout::contiguous, Layout::transposed, Layout::contiguous, dt,
                    seed += 4);  // decode: x += o_proj(h)
    // Pointer arrays (two batch dims that do not merge) and a broadcast b.
    cuda_accumulate({4, 3}, 6, 5, 7, Layout::contiguous, Layout::bcast_batch, Layout::contiguous,
                    dt, seed += 4);
    cuda_accumulate({2, 3}, 6, 5, 7, Layout::sliced, Layout::transposed, Layout::sliced, dt,
                    seed += 4);
    // linear: the cuBLASLt epilogue with beta = 1 (row-major out, contiguous
    // bias; f16/bf16 always, by copies), and elsewhere bias by a K = 1 GEMM
    // then beta = 1 (f64, column-major out, strided bias).
    cuda_accumulate({2}, 16, 64, 40, Layout::contiguous, Layout::transposed, Layout::contiguous, dt,
                    seed += 4, Precision::highest, true);
    cuda_accumulate({}, 1, 512, 96, Layout::contiguous, Layout::transposed, Layout::contiguous, dt,
                    seed += 4, Precision::highest, true);
    cuda_accumulate({}, 16, 64, 40, Layout::contiguous, Layout::contiguous, Layout::transposed, dt,
                    seed += 4, Precision::highest, true);
    cuda_accumulate({2}, 16, 64, 40, Layout::inner_step, Layout::contiguous, Layout::inner_step, dt,
                    seed += 4, Precision::highest, true);
    cuda_accumulate({3}, 4, 40, 24, Layout::contiguous, Layout::contiguous, Layout::contiguous, dt,
                    seed += 4, Precision::highest, true, true);
    // K = 0: out += bias (the K = 1 GEMM alone, into a layout it must
    // stage), or out unchanged.
    cuda_accumulate({2}, 3, 0, 5, Layout::contiguous, Layout::contiguous, Layout::neg_rows, dt,
                    seed += 4, Precision::highest, true);
    cuda_accumulate({2}, 3, 0, 5, Layout::contiguous, Layout::contiguous, Layout::transposed, dt,
                    seed += 4);
  }
  // TF32 (precision medium): the bias GEMM of the fallback stays exact.
  cuda_accumulate({}, 128, 1024, 96, Layout::contiguous, Layout::contiguous, Layout::contiguous,
                  DType::f32, seed += 4, Precision::medium);
  cuda_accumulate({}, 32, 300, 48, Layout::contiguous, Layout::transposed, Layout::transposed,
                  DType::f32, seed += 4, Precision::medium, true);
}

TEST_CASE("cuda matmul accumulate: closed form, twice, allocating form refused",
          "[cuda][matmul][accumulate]") {
  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, kGpu);
  const Tensor b = Tensor::from_vector<float>({7, 8, 9, 10, 11, 12}, {3, 2}, kGpu);
  MatmulOptions opt = on("cuda");
  opt.accumulate = true;
  Tensor out = Tensor::from_vector<float>({1, -1, 0.5, 100}, {2, 2}, kGpu);
  matmul_out(out, a, b, opt);
  CHECK(out.to_vector<float>() == std::vector<float>{59, 63, 139.5, 254});
  matmul_out(out, a, b, opt);
  CHECK(out.to_vector<float>() == std::vector<float>{117, 127, 278.5, 408});
  const Tensor x = Tensor::from_vector<float>({1, 2}, {1, 2}, kGpu);
  const Tensor W = Tensor::from_vector<float>({1, 0, 0, 1, 1, 1}, {3, 2}, kGpu);
  const Tensor bias = Tensor::from_vector<float>({10, 20, 30}, {3}, kGpu);
  Tensor y = Tensor::from_vector<float>({100, 200, 300}, {1, 3}, kGpu);
  linear_out(y, x, W, bias, opt);
  CHECK(y.to_vector<float>() == std::vector<float>{111, 222, 333});
  try {
    (void)matmul(a, b, opt);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "matmul: accumulate = true needs an output to add into; use matmul_out");
  }
  CHECK(out.to_vector<float>() == std::vector<float>{117, 127, 278.5, 408});
}
