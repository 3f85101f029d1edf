// cuda sum and mean over a leading dim (column_sum.cuh: threads along the
// unit-stride dim, the reduced dim split into segments whose partial sums
// are added in a fixed order) against the reference backend: a bias
// gradient's [16384, 3072], a row or a column alone, lengths that divide
// nothing, widths that take no 16-byte vectors, [B, T, C] over its first two
// dims, negative and zero strides along the reduced dim, a misaligned base,
// strided outputs (whose gaps must stay untouched), layouts that stay on the
// row kernels, and the same bits on a second run. Every input is built on
// the host and the same view taken on both sides.
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "strata/reduce.hpp"
#include "strata/tensor.hpp"

using namespace strata;
using cuda_test::kCuda;
using cuda_test::kGpu;
using cuda_test::kRef;

namespace {

using View = std::function<Tensor(const Tensor&)>;

struct Pair {
  Tensor host, dev;
};

// randn of shape `base` in dt, and view(it) on the host and on the GPU.
Pair make(const Shape& base, std::uint64_t seed, DType dt, const View& view) {
  const Tensor h = Tensor::randn(base, seed, DType::f64).to(dt);
  return {view(h), view(h.to(kGpu))};
}
Pair make(const Shape& s, std::uint64_t seed, DType dt) {
  return make(s, seed, dt, [](const Tensor& t) { return t; });
}

// The GPU's sum of n unit-normal terms (f32 partials, f64 for f64) against
// the reference's f64 sum, both rounded to dt: f32 accumulation error grows
// as sqrt(n); the rounding of a 16-bit result is relative.
double sum_atol(DType dt, std::int64_t n) {
  return dt == DType::f64 ? 1e-9 : cuda_test::tol(dt) * std::sqrt(double(n)) * 0.1;
}
double sum_rtol(DType dt, std::int64_t n) { return cuda_test::tol(dt) * (n > 1000 ? 4 : 1); }

// sum and mean of x over dim (with and without keepdim) on the GPU against
// the reference.
void check_sum_mean(const Pair& x, int dim) {
  const DType dt = x.host.dtype();
  const std::int64_t n = x.host.size(dim);
  const double atol = sum_atol(dt, n), rtol = sum_rtol(dt, n);
  INFO("dim " << dim << ", " << n << " terms");
  cuda_test::require_close(sum(x.dev, dim, false, kCuda), sum(x.host, dim, false, kRef), atol,
                           rtol);
  cuda_test::require_close(mean(x.dev, dim, true, kCuda), mean(x.host, dim, true, kRef),
                           atol / double(n), rtol);
}

std::vector<double> host_values(const Tensor& t) { return t.to(Device::cpu()).to_vector<double>(); }

constexpr DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

}  // namespace

TEST_CASE("cuda column sum: a bias gradient (16384 x 3072), the same bits twice",
          "[cuda][reduce]") {
  for (const DType dt : kDtypes) {
    INFO("dtype " << dtype_name(dt));
    const Pair x = make({16384, 3072}, 71, dt);
    const Tensor got = sum(x.dev, 0, false, kCuda);
    cuda_test::require_close(got, sum(x.host, 0, false, kRef), sum_atol(dt, 16384),
                             sum_rtol(dt, 16384));
    REQUIRE(host_values(got) == host_values(sum(x.dev, 0, false, kCuda)));
    const Tensor m = mean(x.dev, 0, false, kCuda);
    cuda_test::require_close(m, mean(x.host, 0, false, kRef), sum_atol(dt, 16384) / 16384,
                             sum_rtol(dt, 16384));
    REQUIRE(host_values(m) == host_values(mean(x.dev, 0, false, kCuda)));
  }
}

TEST_CASE("cuda column sum: narrow widths, the same bits twice", "[cuda][reduce]") {
  // Few columns and many rows: the most segments, so the second kernel adds
  // hundreds of partials per output.
  for (const Shape& s : {Shape{16384, 768}, Shape{65536, 40}, Shape{100003, 3}})
    for (const DType dt : kDtypes) {
      INFO("shape [" << s[0] << ", " << s[1] << "] dtype " << dtype_name(dt));
      const Pair x = make(s, 72, dt);
      check_sum_mean(x, 0);
      const std::vector<double> a = host_values(sum(x.dev, 0, false, kCuda));
      REQUIRE(a == host_values(sum(x.dev, 0, false, kCuda)));
    }
}

TEST_CASE("cuda column sum: odd shapes", "[cuda][reduce]") {
  // [1, C]: one term; [R, 1]: a plain row; R prime; C odd or not a multiple
  // of the vector width (element loads), or one vector past a tile.
  for (const Shape& s :
       {Shape{1, 3072}, Shape{1, 769}, Shape{1000, 1}, Shape{10007, 33}, Shape{4099, 770},
        Shape{3001, 1000}, Shape{257, 264}, Shape{2, 5}, Shape{63, 129}})
    for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      INFO("shape [" << s[0] << ", " << s[1] << "] dtype " << dtype_name(dt));
      check_sum_mean(make(s, 73, dt), 0);
    }
}

TEST_CASE("cuda column sum: B x T x C over dims 0 and 1", "[cuda][reduce]") {
  for (const Shape& s : {Shape{8, 1024, 768}, Shape{3, 5001, 96}, Shape{7, 300, 17}})
    for (const DType dt : kDtypes) {
      INFO("shape [" << s[0] << ", " << s[1] << ", " << s[2] << "] dtype " << dtype_name(dt));
      const Pair x = make(s, 74, dt);
      check_sum_mean(x, 0);
      check_sum_mean(x, 1);
      check_sum_mean(x, 2);  // the last dim: the row kernels
    }
}

TEST_CASE("cuda column sum: views of x", "[cuda][reduce]") {
  const std::int64_t R = 5000, C = 520;
  const struct {
    const char* name;
    Shape base;
    View view;
  } views[] = {
      // Stays on the row kernels: the reduced dim is the unit-stride one.
      {"transposed", {C, R}, [](const Tensor& t) { return t.transpose(0, 1); }},
      // A negative stride along the reduced dim.
      {"rows flipped", {R, C}, [](const Tensor& t) { return t.flip(0); }},
      // A negative unit stride along the columns: the row kernels.
      {"columns flipped", {R, C}, [](const Tensor& t) { return t.flip(1); }},
      // Stride 0 along the reduced dim: R times one row.
      {"broadcast",
       {1, C},
       [](const Tensor& t) {
         return t.expand({R, C});
       }},
      // Rows C + 8 apart, an offset of 8: vectors still.
      {"padded rows", {R, C + 16}, [](const Tensor& t) { return t.narrow(1, 8, C); }},
      // An offset of one element: no 16-byte alignment, element loads.
      {"misaligned",
       {R * C + 1},
       [](const Tensor& t) {
         return t.as_strided({R, C}, {C, 1}, t.offset() + 1);
       }},
      // A column stride of 2: the row kernels.
      {"strided columns", {R, 2 * C}, [](const Tensor& t) { return t.slice(1, 0, 2 * C, 2); }},
  };
  for (const auto& v : views)
    for (const DType dt : kDtypes) {
      INFO(v.name << ", dtype " << dtype_name(dt));
      check_sum_mean(make(v.base, 75, dt, v.view), 0);
    }
}

TEST_CASE("cuda column sum: strided outputs, their gaps untouched", "[cuda][reduce]") {
  // R = 40 takes one segment (the first kernel writes out), R = 20000 many
  // (the second does).
  const std::int64_t C = 1000;
  for (const std::int64_t R : {std::int64_t(40), std::int64_t(20000)})
    for (const DType dt : kDtypes)
      for (const bool is_mean : {false, true}) {
        INFO("R " << R << " dtype " << dtype_name(dt) << (is_mean ? " mean" : " sum"));
        const Pair x = make({R, C}, 76, dt);
        const Tensor base = Tensor::full({3 * C + 1}, 7.25, dt).to(kGpu);
        const Tensor out = base.slice(0, 1, 3 * C + 1, 3);  // stride 3, offset 1
        REQUIRE(out.size(0) == C);
        if (is_mean) {
          mean_out(out, x.dev, 0, false, kCuda);
          cuda_test::require_close(out, mean(x.host, 0, false, kRef), sum_atol(dt, R) / double(R),
                                   sum_rtol(dt, R));
        } else {
          sum_out(out, x.dev, 0, false, kCuda);
          cuda_test::require_close(out, sum(x.host, 0, false, kRef), sum_atol(dt, R),
                                   sum_rtol(dt, R));
        }
        const std::vector<double> b = host_values(base);
        for (std::size_t i = 0; i < b.size(); ++i)
          if (i % 3 != 1) REQUIRE(b[i] == 7.25);
      }
}

TEST_CASE("cuda column sum: B x T x C into a transposed out or every other row", "[cuda][reduce]") {
  // out [B, C] as the transpose of a [C, B] buffer (its smallest stride
  // along B, which then leads the outer dims), and [T, C] as every other
  // row of a [2T, C] buffer (sum over dim 0: a column kernel writing a view).
  const std::int64_t B = 6, T = 3000, C = 264;
  for (const DType dt : kDtypes) {
    INFO("dtype " << dtype_name(dt));
    const Pair x = make({B, T, C}, 77, dt);
    const Tensor ot = Tensor::full({C, B}, 7.25, dt).to(kGpu).transpose(0, 1);
    sum_out(ot, x.dev, 1, false, kCuda);
    cuda_test::require_close(ot, sum(x.host, 1, false, kRef), sum_atol(dt, T), sum_rtol(dt, T));
    const Tensor buf = Tensor::full({2 * T, C}, 7.25, dt).to(kGpu);
    const Tensor os = buf.slice(0, 0, 2 * T, 2);
    sum_out(os, x.dev, 0, false, kCuda);
    cuda_test::require_close(os, sum(x.host, 0, false, kRef), sum_atol(dt, B), sum_rtol(dt, B));
    for (const double v : host_values(buf.slice(0, 1, 2 * T, 2))) REQUIRE(v == 7.25);
  }
}
