// The cuda matrix-vector kernel (backends/cuda/matmul/matmul_gemv.cu): which
// calls the registry gives it, its results against an f64 sum on the host
// (row counts up to 16, the 16-byte and the element-wise paths, bias,
// accumulate, strided x and W, out transposed, long K, one column, odd N),
// and its inputs written by the kernels just before it on the same stream,
// eagerly and replayed from a graph (it is launched with programmatic
// dependent launch and prefetches its weights before it waits). bf16/f16
// calls of 9-16 rows with 16-byte rows take it on the tensor cores
// (gemv16_mma.cuh; STRATA_GEMV16_MMA=0 turns that off in a tuning build);
// f32 calls of 9-16 rows with a small W take gemv16, other 9-16 row calls
// only with STRATA_GEMV_MAX_M (both read once per process): the hidden
// [gemv_all] test reruns these cases in a child process with 16, and
// [gemv16_ffma_all] (tuning builds) with 16 and the tensor cores off. The
// binary skips without a GPU.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "catch.hpp"
#include "child_rerun.hpp"
#include "dependent_steps.hpp"
#include "matmul_test_util.hpp"
#include "strata/elementwise.hpp"
#include "strata/graph.hpp"
#include "strata/matmul.hpp"
#include "strata/matmul_args.hpp"
#include "strata/norm.hpp"
#include "strata/registry.hpp"

using namespace strata;
using matmul_test::on;
using matmul_test::require_close;

namespace strata::cuda {
// matmul_gemv.cu: the most rows any call may have to take gemv
// (STRATA_GEMV_MAX_M, default 8; the tensor cores' calls aside).
int gemv_max_rows_for_test();
// matmul_gemv.cu: the kernel it launches for g ("gemv", "gemv16",
// "gemv16_mma").
std::string gemv_path_for_test(const MatmulArgs& g);
// tuning_build.cpp: whether this build has the lab's candidates.
bool tuning_build_for_test();
}  // namespace strata::cuda

namespace {

const Device kGpu = Device::cuda(0);
const char* const kGemv = "cuda.matmul.gemv";

// Whether this process sends 16-bit calls of 9-16 rows to the tensor
// cores (unless STRATA_GEMV16_MMA=0), read here independently of the kernel.
bool mma_on() {
  const char* e = std::getenv("STRATA_GEMV16_MMA");
  return e == nullptr || std::string(e) != "0";
}

// Whether a 16-bit call of 9-16 rows with this K, N and x / W windows (see
// place() below: pad 8 keeps 16-byte aligned rows, pad 3 does not, nor
// does a K that is not a multiple of 8) meets the tensor cores' 16-byte
// preconditions.
bool rows16(DType dt, std::int64_t K, std::int64_t N, int x_pad, int w_pad) {
  return dt != DType::f32 && K % 8 == 0 && x_pad % 8 == 0 && (N == 1 || w_pad % 8 == 0);
}

// Whether a call of M rows may take gemv in this process: up to
// STRATA_GEMV_MAX_M rows when it is set, else up to 8, and 9-16 rows
// that the tensor cores take, or in f32 with K > 1 and W of at most 2^20
// elements (matmul_gemv.cu's measured range).
bool gemv_allowed(DType dt, std::int64_t M, std::int64_t K, std::int64_t N, int x_pad, int w_pad) {
  if (M > 16) return false;
  if (std::getenv("STRATA_GEMV_MAX_M") != nullptr) return M <= cuda::gemv_max_rows_for_test();
  if (M <= 8) return true;
  if (dt == DType::f32) return K > 1 && N * K <= (std::int64_t(1) << 20);
  return mma_on() && rows16(dt, K, N, x_pad, w_pad);
}

// linear(x, w) into out as the matmul call the registry sees.
MatmulArgs linear_args(const Tensor& x, const Tensor& w, const Tensor& out) {
  MatmulArgs a;
  a.M = x.size(0);
  a.K = x.size(1);
  a.N = w.size(0);
  a.a = x.operand();
  a.b = w.transpose(0, 1).operand();
  a.out = out.operand();
  return a;
}

// The name of the cuda kernel the registry picks for linear(x, w).
std::string kernel_for(const Tensor& x, const Tensor& w, const Tensor& out) {
  const Registry& r = Registry::get();
  return r
      .find(r.op_id("matmul"), r.resolve_backend("matmul", "cuda", kGpu), x.dtype(),
            linear_args(x, w, out))
      .info->name;
}

// The kernel gemv should launch for M rows of dtype dt, K, and x and W
// that are contiguous or windows of `x_pad` / `w_pad` extra columns: the
// tensor cores take 16-bit 9-16 rows with 16-byte rows when switched on;
// gemv16 the rest.
std::string expected_path(DType dt, std::int64_t M, std::int64_t K, std::int64_t N, int x_pad,
                          int w_pad) {
  if (M <= 8) return "gemv";
  return rows16(dt, K, N, x_pad, w_pad) && mma_on() ? "gemv16_mma" : "gemv16";
}

// x [M, K] (when `x_pad` > 0 a window of a buffer of K + x_pad columns:
// pad 3 starts at column 1, so rows are not 16-byte aligned and the
// 16-byte paths are off; pad 8 starts at column 8, so 16-bit rows stay
// aligned with a row stride other than K), W [N, K] (likewise `w_pad`),
// bias [N], out [M, N] (column-major when `out_t`), accumulating or not:
// the cuda result against the f64 sum of the same values, and the kernel
// gemv picks (expected_path).
void check_case(DType dt, std::int64_t M, std::int64_t K, std::int64_t N, bool bias, bool acc,
                int x_pad, int w_pad, bool out_t, std::uint64_t seed) {
  INFO("dtype " << dtype_name(dt) << " M " << M << " K " << K << " N " << N << " bias " << bias
                << " accumulate " << acc << " x pad " << x_pad << " W pad " << w_pad
                << " out transposed " << out_t);
  const Tensor hx = Tensor::randn({M, K}, seed, dt), hw = Tensor::randn({N, K}, seed + 1, dt);
  const Tensor hb = Tensor::randn({N}, seed + 2, dt), ho = Tensor::randn({M, N}, seed + 3, dt);
  auto place = [](const Tensor& v, int pad) {
    if (pad == 0) return v.to(kGpu);
    Tensor big = Tensor::full({v.size(0), v.size(1) + pad}, NAN, v.dtype(), kGpu);
    Tensor view = big.narrow(1, pad == 8 ? 8 : 1, v.size(1));
    view.copy_from(v);
    return view;
  };
  const Tensor x = place(hx, x_pad), w = place(hw, w_pad);
  Tensor out = out_t ? Tensor::full({N, M}, NAN, dt, kGpu).transpose(0, 1)
                     : Tensor::full({M, N}, NAN, dt, kGpu);
  out.copy_from(ho);
  // Every case has unit-stride K <= 16384: the row count alone decides.
  const std::string k = kernel_for(x, w, out);
  if (gemv_allowed(dt, M, K, N, x_pad, w_pad)) {
    CHECK(k == kGemv);
    CHECK(cuda::gemv_path_for_test(linear_args(x, w, out)) ==
          expected_path(dt, M, K, N, x_pad, w_pad));
  } else {
    CHECK(k != kGemv);
  }
  MatmulOptions opt = on("cuda");
  opt.accumulate = acc;
  linear_out(out, x, w, bias ? hb.to(kGpu) : Tensor(), opt);

  // The f64 sum (W [N, K] row-major: b = W^T).
  const std::vector<double> want =
      matmul_test::affine_f64(hx.to_vector<double>(), hw.to_vector<double>(), 1, K,
                              hb.to_vector<double>(), bias, ho.to_vector<double>(), acc, M, N, K);
  // Rows gemv refuses go to cuBLAS (or gemv_multirow for K = 1), whose
  // f16/bf16 paths with a bias or accumulate round more than once
  // (docs/guide/matmul.md, "Known deviations"; test_cuda_gemv_multirow.cpp says more):
  // the [matmul] suites check cuBLAS, this file the matrix-vector kernels.
  if (k == "cuda.matmul.cublas" && dt != DType::f32 && (bias || acc)) return;
  require_close(out.contiguous(), Tensor::from_vector<double>(want, {M, N}).to(dt), K);
}

}  // namespace

TEST_CASE("cuda gemv: the calls it takes", "[cuda][matmul][gemv]") {
  // STRATA_GEMV_MAX_M is honoured: 8 rows unless it is set (the child run
  // of [gemv_all] sets 16).
  const char* env = std::getenv("STRATA_GEMV_MAX_M");
  CHECK(cuda::gemv_max_rows_for_test() == (env != nullptr ? std::atoi(env) : 8));
  // And 16-bit 9-16 rows go to the tensor cores unless STRATA_GEMV16_MMA=0
  // (the child of [gemv16_ffma_all]), f32 and 1-8 rows never. Unset, 9-16
  // rows reach gemv only that way, or in f32 with a small W (gemv16).
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    // Up to the limit gemv, past it cuBLAS (W^T is not gemv_multirow's layout);
    // 17 rows always cuBLAS.
    for (std::int64_t M : {1, 2, 5, 8, 9, 12, 16, 17}) {
      INFO("M " << M);
      const Tensor x = Tensor::zeros({M, 512}, dt, kGpu), w = Tensor::zeros({768, 512}, dt, kGpu);
      const Tensor out = Tensor::zeros({M, 768}, dt, kGpu);
      const bool allowed = gemv_allowed(dt, M, 512, 768, 0, 0);
      CHECK(kernel_for(x, w, out) == (allowed ? kGemv : "cuda.matmul.cublas"));
      if (allowed)
        CHECK(cuda::gemv_path_for_test(linear_args(x, w, out)) ==
              expected_path(dt, M, 512, 768, 0, 0));
      // x with a row stride (the element path) and out column-major: the same.
      const Tensor xs = Tensor::zeros({M, 515}, dt, kGpu).narrow(1, 1, 512);
      const Tensor ot = Tensor::zeros({768, M}, dt, kGpu).transpose(0, 1);
      CHECK(kernel_for(xs, w, ot) ==
            (gemv_allowed(dt, M, 512, 768, 3, 0) ? kGemv : "cuda.matmul.cublas"));
    }
    // A strided K, f64 and a K beyond 16384 stay with cuBLAS.
    const Tensor w = Tensor::zeros({64, 512}, dt, kGpu);
    const Tensor xs = Tensor::zeros({1, 1024}, dt, kGpu).slice(1, 0, 1024, 2);
    CHECK(kernel_for(xs, w, Tensor::zeros({1, 64}, dt, kGpu)) == "cuda.matmul.cublas");
    const Tensor wl = Tensor::zeros({2, 16400}, dt, kGpu);
    CHECK(kernel_for(Tensor::zeros({1, 16400}, dt, kGpu), wl, Tensor::zeros({1, 2}, dt, kGpu)) ==
          "cuda.matmul.cublas");
  }
  const Tensor x = Tensor::zeros({1, 64}, DType::f64, kGpu);
  CHECK(kernel_for(x, Tensor::zeros({8, 64}, DType::f64, kGpu),
                   Tensor::zeros({1, 8}, DType::f64, kGpu)) == "cuda.matmul.cublas");
}

TEST_CASE("cuda gemv vs an f64 sum: rows, sizes, bias, accumulate, layouts",
          "[cuda][matmul][gemv]") {
  std::uint64_t seed = 9000;
  // The decode projections of the benchmark model, odd K (element path),
  // K not a multiple of the unroll, long K, one column, K = 1.
  const std::pair<std::int64_t, std::int64_t> kn[] = {{512, 768}, {1408, 512}, {512, 2816},
                                                      {33, 7},    {520, 24},   {4104, 40},
                                                      {16384, 3}, {64, 1},     {1, 5}};
  // 9, 12 and 16 rows: gemv on the tensor cores for bf16/f16 with 16-byte
  // rows, gemv16 for f32 with W up to 2^20 elements and K > 1, for the
  // rest with STRATA_GEMV_MAX_M=16 ([gemv_all]), else cuBLAS.
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (std::int64_t M : {1, 3, 8, 9, 12, 16})
      for (const auto& [K, N] : kn)
        for (int v = 0; v < 4; ++v)  // bias and accumulate, each on and off
          check_case(dt, M, K, N, (v & 1) != 0, (v & 2) != 0, 0, 0, false, seed += 4);
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t M : {1, 2, 4, 6, 11, 16}) {
      // Windows of wider buffers (the element path), a column-major out.
      check_case(dt, M, 96, 40, true, true, 3, 0, false, seed += 4);
      check_case(dt, M, 96, 40, false, true, 0, 3, false, seed += 4);
      check_case(dt, M, 512, 64, true, true, 0, 0, true, seed += 4);
    }
}

TEST_CASE("cuda gemv vs an f64 sum: 9-16 rows in bf16 and f16", "[cuda][matmul][gemv]") {
  // The shapes of the tensor-core kernel (gemv16_mma.cuh, [gemv16_mma_all]):
  // N a tile of 16 and either side of it, one column, a decode projection;
  // K one, two and three pieces of 8 (a chunk of 32 cut short), the model's
  // K, and 36 (not a multiple of 8: gemv16 takes it). Bias, accumulate, a
  // column-major out and x / W windows (row stride K + 8, still 16-byte
  // aligned) rotate over the cases. With 16 rows not allowed, cuBLAS.
  std::uint64_t seed = 12000;
  int i = 0;
  for (DType dt : {DType::bf16, DType::f16})
    for (std::int64_t M : {9, 12, 16})
      for (std::int64_t N : {1, 15, 16, 17, 2304})
        for (std::int64_t K : {8, 16, 24, 36, 768, 3072}) {
          ++i;
          check_case(dt, M, K, N, (i & 1) != 0, (i & 2) != 0, i % 5 == 1 ? 8 : 0,
                     i % 7 == 2 ? 8 : 0, i % 3 == 0, seed += 4);
        }
}

TEST_CASE("cuda gemv: inputs written by the kernels just before it, eager and in a graph",
          "[cuda][matmul][gemv][graph]") {
  // x = rms_norm(x0 + d), W = W0 * s and y += x W^T, each op reading what the
  // one before wrote, repeated with new d and s: a kernel that read W or x
  // before its predecessor finished would see an earlier step's values.
  // One row, or 16 when they may take gemv (bf16: the tensor cores, f32:
  // gemv16, W being small).
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO("dtype " << dtype_name(dt));
    const std::int64_t K = 512, N = 768, M = gemv_allowed(dt, 16, K, N, 0, 0) ? 16 : 1;
    const Tensor x0 = Tensor::randn({M, K}, 77, dt).to(kGpu);
    const Tensor w0 = Tensor::randn({N, K}, 78, dt).to(kGpu);
    const Tensor ones = Tensor::full({K}, 1.0, dt, kGpu);
    const Tensor d = Tensor::zeros({1, K}, dt, kGpu), s = Tensor::zeros({1}, dt, kGpu);
    const Tensor xa = Tensor::zeros({M, K}, dt, kGpu);
    const Tensor x = Tensor::zeros({M, K}, dt, kGpu);
    const Tensor w = Tensor::zeros({N, K}, dt, kGpu);
    const Tensor y = Tensor::zeros({M, N}, dt, kGpu);
    CHECK(kernel_for(x, w, y) == kGemv);
    Stream st(kGpu);
    const strata_test::StepOptions o = strata_test::step_options(st);
    auto step = [&] {
      add_out(xa, x0, d, o.opt);
      rms_norm_out(x, xa, ones, 1e-6, o.opt);
      mul_out(w, w0, s, o.opt);
      linear_out(y, x, w, Tensor(), o.acc);
    };
    // The reference's x and W from the same dt values (each op rounds to dt
    // as the GPU's does), the product in f64 with out's old value.
    auto expect = [&](const Tensor& y_before, float dv, float sv) {
      const Tensor hx = rms_norm(add(x0.to(Device::cpu()), Tensor::full({1, K}, dv, dt)),
                                 Tensor::full({K}, 1.0, dt), 1e-6, on("reference"));
      const Tensor hw = mul(w0.to(Device::cpu()), Tensor::full({1}, sv, dt));
      const std::vector<double> want =
          matmul_test::affine_f64(hx.to_vector<double>(), hw.to_vector<double>(), 1, K, {}, false,
                                  y_before.to_vector<double>(), true, M, N, K);
      require_close(y.to(Device::cpu()), Tensor::from_vector<double>(want, {M, N}).to(dt), K);
    };
    strata_test::eager_then_replayed(st, y, d, s, o.opt, step, expect);
  }
}

// The cases again with 16 rows allowed (STRATA_GEMV_MAX_M=16, read once per
// process, in a child process): 9-16 rows then take gemv's second kernel,
// and the routing and value checks above must hold for it too.
// strata_cuda_tests "[gemv_all]" on a GPU.
TEST_CASE("cuda gemv: the cases with 16 rows allowed", "[.][gemv_all]") {
  strata_test::rerun_with_env("STRATA_GEMV_MAX_M", "16", "[gemv]", "strata_gemv_all.log");
}

// The cases again with 16 rows allowed and the tensor-core kernel off
// (STRATA_GEMV_MAX_M=16 STRATA_GEMV16_MMA=0, in a child process; tuning
// builds only): every call of 9-16 rows then takes gemv16, and the routing
// and value checks above must hold. strata_cuda_tests "[gemv16_ffma_all]"
// on a GPU.
TEST_CASE("cuda gemv: the cases with 16 rows on gemv16", "[.][gemv16_ffma_all]") {
  if (std::getenv("STRATA_GEMV16_MMA") != nullptr) return;  // the child, or set by hand
  // STRATA_GEMV16_MMA=0 selects a candidate that lost its measurement: a
  // build without the lab refuses it (backends/cuda/tuning_build.hpp).
  if (!cuda::tuning_build_for_test()) return;
  // The child inherits it; unset again so that later tests of this process
  // (which read nothing of it, mma_on() aside) see the environment as given.
  setenv("STRATA_GEMV16_MMA", "0", 1);
  strata_test::rerun_with_env("STRATA_GEMV_MAX_M", "16", "[gemv]", "strata_gemv16_ffma_all.log");
  unsetenv("STRATA_GEMV16_MMA");
}
