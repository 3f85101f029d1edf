// The cuda matrix-vector kernel for a row-major b
// (backends/cuda/matmul/matmul_gemv_multirow.cu): which calls the registry gives
// it, its results against an f64 sum on the host (every row count up to 16,
// N not a multiple of the 16-byte width, each column-group count the
// launch picks, bias, accumulate, a in every layout, b as windows and with
// its rows flipped, out transposed), and its inputs written by the kernels
// just before it on the same stream, eagerly and replayed from a graph (it
// is launched with programmatic dependent launch and prefetches b before it
// waits). The binary skips without a GPU.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "child_rerun.hpp"
#include "dependent_steps.hpp"
#include "matmul_test_util.hpp"
#include "strata/elementwise.hpp"
#include "strata/graph.hpp"
#include "strata/matmul.hpp"
#include "strata/matmul_args.hpp"
#include "strata/registry.hpp"

using namespace strata;
using matmul_test::Layout;
using matmul_test::on;
using matmul_test::require_close;

namespace strata::cuda {
// matmul_gemv_multirow.cu: the most rows a call may have to take gemv_multirow
// (STRATA_GEMV_ROWS_MAX_M, default 16).
int gemv_multirow_max_rows_for_test();
// matmul_gemv.cu: the most rows any call may have to take gemv
// (STRATA_GEMV_MAX_M, default 8; the tensor cores' calls aside).
int gemv_max_rows_for_test();
}  // namespace strata::cuda

namespace {

const Device kGpu = Device::cuda(0);

// Whether a call of M rows may take gemv_multirow in this process.
bool rows_allowed(std::int64_t M) { return M <= cuda::gemv_multirow_max_rows_for_test(); }
const char* const kMultirow = "cuda.matmul.gemv_multirow";

// The name of the cuda kernel the registry picks for matmul(a, b) into out.
std::string kernel_for(const Tensor& a, const Tensor& b, const Tensor& out) {
  const Registry& r = Registry::get();
  MatmulArgs g;
  g.M = a.size(0);
  g.K = a.size(1);
  g.N = b.size(1);
  g.a = a.operand();
  g.b = b.operand();
  g.out = out.operand();
  return r.find(r.op_id("matmul"), r.resolve_backend("matmul", "cuda", kGpu), a.dtype(), g)
      .info->name;
}

// How b [K, N] sits in memory.
enum class BLay {
  contiguous,  // row-major
  window,      // columns [0, N) of rows padded to a multiple of 8 (+ 8)
  window_off,  // columns [8, N + 8) of such rows: an aligned offset
  neg_rows,    // rows flipped: a negative K stride
  unaligned,   // columns [1, N + 1): rows 16-byte misaligned (refused)
  transposed,  // column-major (gemv's or cuBLAS's layout, not ours)
};
// BLay's values in order.
constexpr const char* kBLayNames[] = {"contiguous", "window",    "window_off",
                                      "neg_rows",   "unaligned", "transposed"};
const char* name(BLay l) { return kBLayNames[static_cast<int>(l)]; }

// hb (host [K, N]) on the GPU in layout l, everything around it NaN.
Tensor place_b(const Tensor& hb, BLay l) {
  const std::int64_t K = hb.size(0), N = hb.size(1);
  const std::int64_t wide = (N + 9 + 7) / 8 * 8;  // room for an offset of 8, rows of 32 bytes
  Tensor v;
  switch (l) {
    case BLay::contiguous:
      v = Tensor::full({K, N}, NAN, hb.dtype(), kGpu);
      break;
    case BLay::window:
      v = Tensor::full({K, wide}, NAN, hb.dtype(), kGpu).narrow(1, 0, N);
      break;
    case BLay::window_off:
      v = Tensor::full({K, wide}, NAN, hb.dtype(), kGpu).narrow(1, 8, N);
      break;
    case BLay::neg_rows:
      v = Tensor::full({K, N}, NAN, hb.dtype(), kGpu).flip(0);
      break;
    case BLay::unaligned:
      v = Tensor::full({K, wide}, NAN, hb.dtype(), kGpu).narrow(1, 1, N);
      break;
    case BLay::transposed:
      v = Tensor::full({N, K}, NAN, hb.dtype(), kGpu).transpose(0, 1);
      break;
  }
  v.copy_from(hb);
  return v;
}

// Whether gemv_multirow must take the call (b's layout and the sizes alone;
// every case here has M <= 16 and rows x K <= 32768). With K = 1, b [1, N]
// is also unit-stride along K, so gemv (registered first) takes as many rows
// as it is allowed.
bool rows_expected(BLay l, std::int64_t M, std::int64_t K, std::int64_t N, DType dt) {
  if (!rows_allowed(M) || (K == 1 && M <= cuda::gemv_max_rows_for_test())) return false;
  const std::int64_t V = dt == DType::f32 ? 4 : 8;
  switch (l) {
    case BLay::window:
    case BLay::window_off:
      return true;
    case BLay::contiguous:
    case BLay::neg_rows:
      return N % V == 0;
    default:
      return false;
  }
}

// a [M, K] in layout al, b [K, N] in layout bl, bias [N], out [M, N]
// (column-major when `out_t`), accumulating or not: the cuda result against
// the f64 sum of the same values, and the kernel that ran.
void check_case(DType dt, std::int64_t M, std::int64_t K, std::int64_t N, Layout al, BLay bl,
                bool bias, bool acc, bool out_t, std::uint64_t seed) {
  INFO("dtype " << dtype_name(dt) << " M " << M << " K " << K << " N " << N << " a "
                << matmul_test::name(al) << " b " << name(bl) << " bias " << bias << " accumulate "
                << acc << " out transposed " << out_t);
  const Tensor ha = Tensor::randn({M, K}, seed, dt), hb = Tensor::randn({K, N}, seed + 1, dt);
  const Tensor hbias = Tensor::randn({N}, seed + 2, dt), ho = Tensor::randn({M, N}, seed + 3, dt);
  const Tensor a = matmul_test::make_view(ha, al, kGpu), b = place_b(hb, bl);
  Tensor out = out_t ? Tensor::full({N, M}, NAN, dt, kGpu).transpose(0, 1)
                     : Tensor::full({M, N}, NAN, dt, kGpu);
  out.copy_from(ho);
  const std::string k = kernel_for(a, b, out);
  const bool rows = rows_expected(bl, M, K, N, dt);
  if (rows)
    CHECK(k == kMultirow);
  else
    CHECK(k != kMultirow);
  MatmulOptions opt = on("cuda");
  opt.accumulate = acc;
  if (bias)
    linear_out(out, a, b.transpose(0, 1), hbias.to(kGpu), opt);  // x W^T + b, W^T = b
  else
    matmul_out(out, a, b, opt);

  // The f64 sum (b [K, N] row-major).
  const std::vector<double> want = matmul_test::affine_f64(
      ha.to_vector<double>(), hb.to_vector<double>(), N, 1, hbias.to_vector<double>(), bias,
      ho.to_vector<double>(), acc, M, N, K);
  // This file checks the values of the matrix-vector kernels (gemv_multirow,
  // and gemv where it takes a layout); cuBLAS's results are checked by the
  // [matmul] suites. Its f16/bf16 paths with a bias (or with accumulate)
  // round more than once: matmul_cublas.cu documents the product rounded
  // before the bias is added, and a GPU run found elements beyond even two
  // roundings here (docs/guide/matmul.md, "Known deviations"), so they are
  // not held to the one-rounding bound below.
  if (!rows && k != "cuda.matmul.gemv" && dt != DType::f32 && (bias || acc)) return;
  require_close(out.contiguous(), Tensor::from_vector<double>(want, {M, N}).to(dt), K);
}

}  // namespace

TEST_CASE("cuda gemv_multirow: the calls it takes", "[cuda][matmul][gemv_multirow]") {
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    const std::int64_t V = dt == DType::f32 ? 4 : 8;
    const Tensor b = Tensor::zeros({512, 1536}, dt, kGpu);
    for (std::int64_t M : {1, 2, 5, 8, 9, 16}) {
      INFO("M " << M);
      const Tensor out = Tensor::zeros({M, 1536}, dt, kGpu);
      // More rows than allowed: cuBLAS (b is not gemv's layout).
      const std::string want = rows_allowed(M) ? kMultirow : "cuda.matmul.cublas";
      CHECK(kernel_for(Tensor::zeros({M, 512}, dt, kGpu), b, out) == want);
      // a in any layout: it is staged.
      CHECK(kernel_for(Tensor::zeros({512, M}, dt, kGpu).transpose(0, 1), b, out) == want);
      CHECK(kernel_for(Tensor::zeros({M, 1024}, dt, kGpu).slice(1, 0, 1024, 2), b, out) == want);
    }
    // 17 rows, b column-major (gemv for as many rows as it may take, else cuBLAS), N not a
    // multiple of the vector width in a contiguous b (rows misaligned), b
    // with a column step, f64 stay away.
    CHECK(kernel_for(Tensor::zeros({17, 512}, dt, kGpu), b, Tensor::zeros({17, 1536}, dt, kGpu)) ==
          "cuda.matmul.cublas");
    const Tensor bt = Tensor::zeros({1536, 512}, dt, kGpu).transpose(0, 1);
    CHECK(kernel_for(Tensor::zeros({1, 512}, dt, kGpu), bt, Tensor::zeros({1, 1536}, dt, kGpu)) ==
          "cuda.matmul.gemv");
    // 12 rows: gemv when allowed that many, or (STRATA_GEMV_MAX_M unset) on
    // the tensor cores in bf16/f16 unless STRATA_GEMV16_MMA=0, and in f32
    // since W [1536, 512] has at most 2^20 elements (matmul_gemv.cu).
    const char* mma = std::getenv("STRATA_GEMV16_MMA");
    const bool gemv12 = 12 <= cuda::gemv_max_rows_for_test() ||
                        (std::getenv("STRATA_GEMV_MAX_M") == nullptr &&
                         (dt == DType::f32 || mma == nullptr || std::string(mma) != "0"));
    CHECK(kernel_for(Tensor::zeros({12, 512}, dt, kGpu), bt, Tensor::zeros({12, 1536}, dt, kGpu)) ==
          (gemv12 ? "cuda.matmul.gemv" : "cuda.matmul.cublas"));
    const std::int64_t odd = 1536 - V / 2;
    CHECK(kernel_for(Tensor::zeros({1, 512}, dt, kGpu), Tensor::zeros({512, odd}, dt, kGpu),
                     Tensor::zeros({1, odd}, dt, kGpu)) == "cuda.matmul.cublas");
    const Tensor bs = Tensor::zeros({512, 3072}, dt, kGpu).slice(1, 0, 3072, 2);
    CHECK(kernel_for(Tensor::zeros({1, 512}, dt, kGpu), bs, Tensor::zeros({1, 1536}, dt, kGpu)) ==
          "cuda.matmul.cublas");
    // a staged in shared memory: rows (a power of 2) x K <= 32768.
    for (const auto& [M, K, ok] :
         {std::tuple{16, 2048, true}, std::tuple{16, 2049, false}, std::tuple{8, 4096, true},
          std::tuple{5, 4097, false}, std::tuple{1, 32768, true}, std::tuple{1, 32769, false}}) {
      INFO("M " << M << " K " << K);
      const Tensor bk = Tensor::zeros({K, 64}, dt, kGpu);
      CHECK((kernel_for(Tensor::zeros({M, K}, dt, kGpu), bk, Tensor::zeros({M, 64}, dt, kGpu)) ==
             kMultirow) == (ok && rows_allowed(M)));
    }
    // More than one row only while b is at most 4M elements; one row at any b.
    for (const auto& [M, N, ok] :
         {std::tuple{2, 2048, true}, std::tuple{2, 2056, false}, std::tuple{1, 2056, true}}) {
      INFO("M " << M << " N " << N);
      const Tensor bn = Tensor::zeros({2048, N}, dt, kGpu);
      CHECK((kernel_for(Tensor::zeros({M, 2048}, dt, kGpu), bn, Tensor::zeros({M, N}, dt, kGpu)) ==
             kMultirow) == (ok && rows_allowed(M)));
    }
  }
  const Tensor b = Tensor::zeros({64, 64}, DType::f64, kGpu);
  CHECK(kernel_for(Tensor::zeros({1, 64}, DType::f64, kGpu), b,
                   Tensor::zeros({1, 64}, DType::f64, kGpu)) == "cuda.matmul.cublas");
}

TEST_CASE("cuda gemv_multirow vs an f64 sum: rows, sizes, bias, accumulate, layouts",
          "[cuda][matmul][gemv_multirow]") {
  std::uint64_t seed = 12000;
  // The decode shapes, N not a multiple of 4 or 8 (windows: the tail group
  // reads element by element), K not a multiple of the rows in flight, one
  // column, K = 1, and N large enough for each column-group count the
  // launch picks (1, 2, 4 and 8 groups per block: 192 blocks or more).
  const std::pair<std::int64_t, std::int64_t> kn[] = {
      {512, 1536}, {512, 1408}, {1408, 512}, {33, 7}, {520, 45},  {37, 3077},
      {3, 6150},   {2, 12291},  {64, 1},     {1, 40}, {4100, 24}, {96, 200}};
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (std::int64_t M : {1, 3, 8, 16})
      for (const auto& [K, N] : kn)
        for (int v = 0; v < 4; ++v) {                // bias and accumulate, each on and off
          const std::int64_t rows = M == 3 ? 4 : M;  // the kernel's row count, a power of 2
          if (rows * K > 32768) continue;            // a too large to stage: cuBLAS
          const BLay bl = N % 8 == 0 ? BLay::contiguous : BLay::window;
          check_case(dt, M, K, N, Layout::contiguous, bl, (v & 1) != 0, (v & 2) != 0, false,
                     seed += 4);
        }
  // Every row count, a in each layout, b as windows and flipped, out
  // column-major.
  const Layout a_lays[] = {Layout::contiguous, Layout::transposed, Layout::sliced,
                           Layout::neg_rows,   Layout::neg_cols,   Layout::inner_step};
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (std::int64_t M = 1; M <= 16; ++M) {
      const Layout al = a_lays[static_cast<std::size_t>(M) % std::size(a_lays)];
      check_case(dt, M, 96, 200, al, BLay::contiguous, true, true, M % 2 == 0, seed += 4);
      check_case(dt, M, 72, 203, al, BLay::window_off, M % 3 == 0, true, false, seed += 4);
      check_case(dt, M, 130, 64, al, BLay::neg_rows, true, M % 2 == 1, M % 3 == 1, seed += 4);
      // Refused layouts still give the right result (cuBLAS or gemv).
      if (M % 5 == 0) {
        check_case(dt, M, 48, 40, al, BLay::unaligned, true, true, false, seed += 4);
        check_case(dt, M, 48, 40, al, BLay::transposed, false, true, false, seed += 4);
      }
    }
}

TEST_CASE("cuda gemv_multirow: inputs written by the kernels just before it, eager and in a graph",
          "[cuda][matmul][gemv_multirow][graph]") {
  // a = a0 + d, b = b0 * s and y += a b, each op reading what the one before
  // wrote, repeated with new d and s: a kernel that read a or b before its
  // predecessor finished would see an earlier step's values.
  const std::int64_t M = rows_allowed(2) ? 2 : 1, K = 512, N = 1536;
  const Tensor a0 = Tensor::randn({M, K}, 87).to(kGpu), b0 = Tensor::randn({K, N}, 88).to(kGpu);
  const Tensor d = Tensor::zeros({1, K}, DType::f32, kGpu),
               s = Tensor::zeros({1}, DType::f32, kGpu);
  const Tensor a = Tensor::zeros({M, K}, DType::f32, kGpu);
  const Tensor b = Tensor::zeros({K, N}, DType::f32, kGpu);
  const Tensor y = Tensor::zeros({M, N}, DType::f32, kGpu);
  CHECK(kernel_for(a, b, y) == kMultirow);
  Stream st(kGpu);
  const strata_test::StepOptions o = strata_test::step_options(st);
  auto step = [&] {
    add_out(a, a0, d, o.opt);
    mul_out(b, b0, s, o.opt);
    matmul_out(y, a, b, o.acc);
  };
  auto expect = [&](const Tensor& y_before, float dv, float sv) {
    const Tensor ha = add(a0.to(Device::cpu()), Tensor::full({1, K}, dv, DType::f32));
    const Tensor hb = mul(b0.to(Device::cpu()), Tensor::full({1}, sv, DType::f32));
    const Tensor want = add(y_before, matmul(ha, hb, on("reference")));
    require_close(y.to(Device::cpu()), want, K);
  };
  strata_test::eager_then_replayed(st, y, d, s, o.opt, step, expect);
}

// The cases again with one row allowed (STRATA_GEMV_ROWS_MAX_M=1, read once
// per process, in a child process): multi-row calls then go to cuBLAS, and
// the routing and value checks above must hold for that too.
// strata_cuda_tests "[gemv_multirow_all]" on a GPU.
TEST_CASE("cuda gemv_multirow: the cases with one row allowed", "[.][gemv_multirow_all]") {
  strata_test::rerun_with_env("STRATA_GEMV_ROWS_MAX_M", "1", "[gemv_multirow]",
                              "strata_gemv_multirow_all.log");
}
