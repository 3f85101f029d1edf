// The 16-bit row kernels and the 16-bit tiled elementwise kernel
// (backends/cuda/elementwise/ew_tiled16.cuh) against the reference backend,
// in whatever forms the process runs: the defaults, or in a tuning build the
// candidates that STRATA_ROWS_VARIANT (backends/cuda/rows/rows_variant.hpp)
// and STRATA_EW_VARIANT=base select (backends/cuda/lab/). The
// [variant_cases] run in the process's forms; the hidden [cuda_variants]
// case runs this binary once per candidate with the variable set (it is
// read once per process), through these cases and the [rows16], [rows] and
// [elementwise] suites, and in a build without the lab checks that a
// candidate's name is refused:
//   strata_cuda_tests "[cuda_variants]"
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "special_rows.hpp"
#include "strata/elementwise.hpp"
#include "strata/error.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/tensor.hpp"
#include "test_core_util.hpp"

namespace strata::cuda {
// Testing hooks (rows_variant.cpp, ew_variant.cpp, tuning_build.cpp).
const char* rows_variant_for_test();
bool ew_variant_tiled16();
bool tuning_build_for_test();
}  // namespace strata::cuda

using namespace strata;
using namespace cuda_test;  // kGpu, kRef, kCuda, tol, require_close

namespace {

std::string env(const char* name) {
  const char* e = std::getenv(name);
  return e ? e : "";
}

// [rows, n] whose 16-byte vector v (elements 8v .. 8v + 7) is centred on
// 0.25 * (v % 32) + offset: each thread of every row geometry (a warp, or
// 128-512 threads, owning vectors lane + i * TPR) sees a different mean and
// maximum, so a reduction that combined per-thread statistics wrongly
// (the between-thread term of the variance, the rescaling of a sum to the
// row's max) is far off.
Tensor lane_pattern(std::int64_t rows, std::int64_t n, double offset, std::uint64_t seed) {
  const std::vector<double> noise = Tensor::randn({rows, n}, seed, DType::f64).to_vector<double>();
  std::vector<double> v(noise.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::int64_t j = static_cast<std::int64_t>(i) % n;
    v[i] = offset + 0.25 * double((j / 8) % 32) + 0.5 * noise[i];
  }
  return Tensor::from_vector<double>(v, {rows, n});
}

void check_rows(const Tensor& xf64, DType dt) {
  const std::int64_t n = xf64.shape()[1];
  const Tensor xh = xf64.to(dt);
  const Tensor w = Tensor::randn({n}, 7, DType::f64).to(dt);
  const Tensor b = Tensor::randn({n}, 8, DType::f64).to(dt);
  strata_test::require_row_ops_close(xh, w, b, dt, false);
}

}  // namespace

TEST_CASE("cuda variants: the process runs the variants its environment names",
          "[cuda][variant_cases]") {
  const std::string rows = env("STRATA_ROWS_VARIANT");
  CHECK(std::string(cuda::rows_variant_for_test()) == (rows.empty() ? "tuned" : rows));
  CHECK(cuda::ew_variant_tiled16() == (env("STRATA_EW_VARIANT") != "base"));
}

TEST_CASE("cuda variants: 16-bit rows of 1032 to 4104 elements",
          "[cuda][ops][rows][variant_cases]") {
  // n / 8 vectors: 129 (blocks of 128 or 256 threads, the last vectors
  // uneven), 256 and 512 (the reg kernels' lengths), 257 and 513 (just
  // past them); 520 rows pass one wave of rows on a 132-SM GPU only in
  // part, 17001 rows of 1032 make every group of the capped grid walk 2
  // rows. Offsets 0 and 24 (mean far from 0: cancellation would show).
  const struct {
    std::int64_t rows, n;
    double offset;
  } cases[] = {{520, 1032, 0.0},  {520, 2048, 24.0}, {33, 2056, 0.0},   {520, 4096, 0.0},
               {520, 4096, 24.0}, {33, 4104, 0.0},   {17001, 1032, 0.0}};
  for (const auto& c : cases)
    for (DType dt : {DType::bf16, DType::f16}) {
      if (c.rows > 10000 && dt == DType::f16) continue;  // the reference's time
      INFO("rows " << c.rows << " n " << c.n << " offset " << c.offset << " dtype "
                   << dtype_name(dt));
      check_rows(lane_pattern(c.rows, c.n, c.offset, 100 + c.n), dt);
    }
}

TEST_CASE("cuda variants: NaN, infinities and constant rows of 4096 16-bit elements",
          "[cuda][ops][rows][variant_cases]") {
  // Row 0 all -inf; 1 one NaN; 2 one -inf; 3 every element of vectors
  // v % 32 == 5 -inf (a whole lane of the warp geometry, and of every other
  // one: a thread whose elements are all -inf); 4 those elements NaN; 5 one
  // +inf; 6 constant (variance 0); 7 ordinary.
  const auto check = [](DType dt, const Tensor& h, const Tensor& d, const Tensor& b) {
    require_close(softmax(d, 1, kCuda), softmax(h, 1, kRef), 1e-7, tol(dt));
    require_close(log_softmax(d, 1, kCuda), log_softmax(h, 1, kRef), tol(dt), tol(dt));
    require_close(layer_norm(d, Tensor(), b.to(kGpu), 1e-5, kCuda),
                  layer_norm(h, Tensor(), b, 1e-5, kRef), tol(dt), tol(dt));
    require_close(rms_norm(d, Tensor(), 1e-6, kCuda), rms_norm(h, Tensor(), 1e-6, kRef), tol(dt),
                  tol(dt));
  };
  strata_test::for_16bit_rows(strata_test::special_rows(4096, 32, 4000), check);
}

TEST_CASE("cuda variants: transposed 16-bit elementwise inputs",
          "[cuda][ops][elementwise][variant_cases]") {
  // Full 64 x 64 tiles ([256, 320]), edge tiles on both dims ([130, 200]),
  // a batch with a partial tile row ([3, 96, 128]), both inputs transposed,
  // a unary op and a cast through the tiles, and layouts the 16-bit tiled
  // kernel must leave to the 32 x 32 one (a transposed input starting one
  // element in; an output whose rows are not 16-byte aligned).
  const std::vector<Shape> shapes = {{256, 320}, {130, 200}, {3, 96, 128}, {64, 64}};
  for (const Shape& s : shapes)
    for (DType dt : {DType::bf16, DType::f16}) {
      const int r = static_cast<int>(s.size());
      Shape st = s;  // the stored shape of a transposed operand
      std::swap(st[r - 1], st[r - 2]);
      INFO("shape " << shape_str(s) << " dtype " << dtype_name(dt));
      const Tensor a = Tensor::randn(s, 11, DType::f64).to(dt);
      const Tensor bt = Tensor::randn(st, 12, DType::f64).to(dt);
      const Tensor ct = Tensor::randn(st, 13, DType::f64).to(dt);
      const Tensor ad = a.to(kGpu), btd = bt.to(kGpu), ctd = ct.to(kGpu);
      auto T = [r](const Tensor& t) { return t.transpose(r - 1, r - 2); };
      const double t = tol(dt);
      require_close(add(ad, T(btd), kCuda), add(a, T(bt), kRef), t, t);
      require_close(sub(T(btd), ad, kCuda), sub(T(bt), a, kRef), t, t);
      require_close(mul(T(btd), T(ctd), kCuda), mul(T(bt), T(ct), kRef), t, t);
      require_close(silu_mul(T(ctd), ad, kCuda), silu_mul(T(ct), a, kRef), t, t);
      require_close(gelu(T(btd), kCuda), gelu(T(bt), kRef), t, t);
      const DType other = dt == DType::bf16 ? DType::f16 : DType::bf16;
      const Tensor co = Tensor::empty(s, other, kGpu);
      copy_(co, T(btd), kCuda);
      require_close(co, cast(T(bt), other, kRef), tol(other), tol(other));
      // A transposed input one element into its buffer (4-byte loads would
      // be misaligned).
      Shape sh = st;
      sh[r - 1] += 1;
      const Tensor big = Tensor::randn(sh, 14, DType::f64).to(dt);
      const Tensor odd = big.narrow(r - 1, 1, st[r - 1]);
      require_close(add(ad, T(big.to(kGpu).narrow(r - 1, 1, st[r - 1])), kCuda),
                    add(a, T(odd), kRef), t, t);
      // An output with rows of n + 1 elements.
      Shape so = s;
      so[r - 1] += 1;
      const Tensor out = Tensor::zeros(so, dt, kGpu).narrow(r - 1, 0, s[r - 1]);
      add_out(out, ad, T(btd), kCuda);
      require_close(out, add(a, T(bt), kRef), t, t);
    }
}

// Every candidate through the cases above and the row and elementwise
// suites, each in a child process of its own (the variables are read once);
// in a build without the lab, a candidate's name refused instead.
TEST_CASE("cuda variants: each candidate through the suites", "[.][cuda_variants]") {
  if (!env("STRATA_ROWS_VARIANT").empty() || !env("STRATA_EW_VARIANT").empty())
    return;  // a child run: nothing to spawn
  // This binary's path (std::system's shell would see its own /proc/self).
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  if (cuda::tuning_build_for_test()) {
    const std::string spec = "[variant_cases],[rows16],[rows],[elementwise]~[large]";
    const std::vector<std::string> runs = {
        "STRATA_ROWS_VARIANT=base", "STRATA_ROWS_VARIANT=fused", "STRATA_ROWS_VARIANT=reg",
        "STRATA_ROWS_VARIANT=reg4", "STRATA_ROWS_VARIANT=reg8",  "STRATA_EW_VARIANT=base",
    };
    for (const std::string& vars : runs) {
      const std::string log = std::filesystem::temp_directory_path().string() + "/strata_" +
                              vars.substr(vars.find('=') + 1) + "_variant.log";
      const std::string cmd = vars + " '" + self + "' '" + spec + "' > '" + log + "' 2>&1";
      INFO(cmd << " (its output: " << log << ")");
      CHECK(std::system(cmd.c_str()) == 0);
    }
  } else {
    const std::string lab_only =
        "STRATA_ROWS_VARIANT=reg '" + self + "' '[variant_lab_only]' > /dev/null 2>&1";
    CHECK(std::system(lab_only.c_str()) == 0);
  }
  // An unknown name is an error naming it, raised by the first 16-bit call.
  const std::string bad =
      "STRATA_ROWS_VARIANT=fastest '" + self + "' '[variant_bad_name]' > /dev/null 2>&1";
  CHECK(std::system(bad.c_str()) == 0);
}

TEST_CASE("cuda variants: an unknown variant name", "[.][variant_bad_name]") {
  const Tensor x = Tensor::zeros({4, 64}, DType::bf16, kGpu);
  const std::string what = core_test::error_of([&] { (void)softmax(x, 1, kCuda); });
  CHECK(what.find("STRATA_ROWS_VARIANT is 'fastest'") != std::string::npos);
}

TEST_CASE("cuda variants: a candidate's name without the lab", "[.][variant_lab_only]") {
  const Tensor x = Tensor::zeros({4, 64}, DType::bf16, kGpu);
  const std::string what = core_test::error_of([&] { (void)softmax(x, 1, kCuda); });
  CHECK(what.find("STRATA_ROWS_VARIANT=reg selects a kernel candidate kept for tuning") !=
        std::string::npos);
}
