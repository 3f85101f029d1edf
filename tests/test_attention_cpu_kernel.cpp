// The cpu backend's softmax_attention kernel, called through the registry
// with hand-built AttentionArgs, against a naive double-precision loop. Every
// instruction set this machine runs (cap_isa_for_test caps the choice) is
// checked, over strided / flipped / broadcast layouts, GQA, bands, masks,
// fully masked rows, N = 0, the decode path and the split-key path.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "strata/attention_args.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
// Defined in backends/cpu/attention/testing.cpp and isa_select.cpp.
bool fast_exp2_for_test(const char* isa, const float* x, float* y, std::int64_t n);
bool fast_exp2_for_test(const char* isa, const double* x, double* y, std::int64_t n);
void cap_isa_for_test(const char* isa);
const char* isa_name();
}  // namespace strata::cpu

namespace {

using strata::AttentionArgs;
using strata::DType;
using i64 = std::int64_t;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A 4-D tensor [B, H, R, C] in a buffer of its own: memory order, gaps and
// flips chosen by `layout`; every element not in the view holds `fill`.
enum class Layout { contiguous, transposed, gapped, flipped, bcast_batch };

template <class T>
struct Buf {
  std::vector<T> mem;
  i64 shape[4] = {};
  i64 strides[4] = {};
  i64 base = 0;  // element offset of [0, 0, 0, 0]
  T* ptr() { return mem.data() + base; }
  T& at(i64 b, i64 h, i64 r, i64 c) {
    return mem[static_cast<std::size_t>(base + b * strides[0] + h * strides[1] + r * strides[2] +
                                        c * strides[3])];
  }
};

template <class T>
Buf<T> make_buf(i64 B, i64 H, i64 R, i64 C, Layout layout, T fill) {
  Buf<T> t;
  const i64 shape[4] = {B, H, R, C};
  std::copy(shape, shape + 4, t.shape);
  int order[4] = {3, 2, 1, 0};  // innermost first
  i64 gap[4] = {1, 1, 1, 1};
  if (layout == Layout::transposed) std::swap(order[0], order[1]);
  if (layout == Layout::gapped) gap[3] = 2, gap[2] = 3;  // non-unit last stride, row padding
  i64 run = 1;
  for (int o : order) {
    t.strides[o] = run * gap[o];
    run = t.strides[o] * std::max<i64>(shape[o], 1);
  }
  if (layout == Layout::bcast_batch) t.strides[0] = 0;
  i64 extent = 1;
  for (int i = 0; i < 4; ++i) extent += std::max<i64>(shape[i] - 1, 0) * t.strides[i];
  if (layout == Layout::flipped) {  // rows and columns run backwards
    t.base = (std::max<i64>(R, 1) - 1) * t.strides[2] + (std::max<i64>(C, 1) - 1) * t.strides[3];
    t.strides[2] = -t.strides[2];
    t.strides[3] = -t.strides[3];
  }
  t.mem.assign(static_cast<std::size_t>(extent + 8), fill);
  return t;
}

template <class T>
void fill_random(Buf<T>& t, std::mt19937_64& rng, double sd = 1.0) {
  std::normal_distribution<double> nd(0.0, sd);
  for (i64 b = 0; b < t.shape[0]; ++b)
    for (i64 h = 0; h < t.shape[1]; ++h)
      for (i64 r = 0; r < t.shape[2]; ++r)
        for (i64 c = 0; c < t.shape[3]; ++c) t.at(b, h, r, c) = static_cast<T>(nd(rng));
}

enum class MaskKind { none, boolean, additive };

struct Case {
  i64 B = 1, Hq = 1, Hkv = 1, M = 4, N = 8, d = 8, dv = 8;
  Layout lq = Layout::contiguous, lk = Layout::contiguous, lv = Layout::contiguous,
         lo = Layout::contiguous;
  i64 band_lo = -strata::kNoLimit, band_hi = strata::kNoLimit;
  MaskKind mask = MaskKind::none;
  bool mask_bcast = false;    // mask broadcast over batch and heads (stride 0)
  double scale = 0;           // 0: 1/sqrt(d)
  int fully_masked_row = -1;  // with a mask: this row keeps nothing
  int nan_row = -1;           // NaN in this query row (of every head)
  double k_jump = 1;          // keys j >= N / 2 scaled by this: the running max jumps
  std::uint64_t seed = 1;
};

std::string describe(const Case& c) {
  return "B=" + std::to_string(c.B) + " Hq=" + std::to_string(c.Hq) +
         " Hkv=" + std::to_string(c.Hkv) + " M=" + std::to_string(c.M) +
         " N=" + std::to_string(c.N) + " d=" + std::to_string(c.d) + " dv=" + std::to_string(c.dv) +
         " layouts q/k/v/o=" + std::to_string(int(c.lq)) + std::to_string(int(c.lk)) +
         std::to_string(int(c.lv)) + std::to_string(int(c.lo)) + " band=[" +
         std::to_string(c.band_lo) + "," + std::to_string(c.band_hi) +
         "] mask=" + std::to_string(int(c.mask)) + (c.mask_bcast ? "(bcast)" : "") +
         " scale=" + std::to_string(c.scale) + " masked_row=" + std::to_string(c.fully_masked_row) +
         " nan_row=" + std::to_string(c.nan_row) + " k_jump=" + std::to_string(c.k_jump) +
         " seed=" + std::to_string(c.seed);
}

template <class T>
void run_case(const Case& cs) {
  INFO(describe(cs));
  std::mt19937_64 rng(cs.seed);
  const T qnan = std::numeric_limits<T>::quiet_NaN();
  // Gaps hold NaN, so reading outside a view shows up in the result.
  Buf<T> q = make_buf<T>(cs.B, cs.Hq, cs.M, cs.d, cs.lq, qnan);
  Buf<T> k = make_buf<T>(cs.B, cs.Hkv, cs.N, cs.d, cs.lk, qnan);
  Buf<T> v = make_buf<T>(cs.B, cs.Hkv, cs.N, cs.dv, cs.lv, qnan);
  fill_random(q, rng);
  fill_random(k, rng);
  fill_random(v, rng);
  for (i64 b = 0; b < cs.B; ++b)
    for (i64 h = 0; h < cs.Hkv; ++h)
      for (i64 j = 0; j < cs.N; ++j)
        for (i64 c = 0; c < cs.d; ++c)
          k.at(b, h, j, c) *= static_cast<T>(2 * j >= cs.N ? cs.k_jump : 1);
  if (cs.nan_row >= 0)
    for (i64 b = 0; b < cs.B; ++b)
      for (i64 h = 0; h < cs.Hq; ++h) q.at(b, h, cs.nan_row, 0) = qnan;
  // Output poisoned with NaN; guards (the buffer's slack) hold a sentinel.
  const T guard = static_cast<T>(12345.0);
  Buf<T> out = make_buf<T>(cs.B, cs.Hq, cs.M, cs.dv, cs.lo, guard);
  for (i64 b = 0; b < cs.B; ++b)
    for (i64 h = 0; h < cs.Hq; ++h)
      for (i64 r = 0; r < cs.M; ++r)
        for (i64 c = 0; c < cs.dv; ++c) out.at(b, h, r, c) = qnan;
  std::vector<T> lse(static_cast<std::size_t>(cs.B * cs.Hq * cs.M + 4), guard);
  std::for_each(lse.begin(), lse.begin() + cs.B * cs.Hq * cs.M, [&](T& x) { x = qnan; });

  // Mask [B, Hq, M, N] (or one [M, N] plane broadcast), bool as bytes.
  const i64 mplanes = cs.mask_bcast ? 1 : cs.B * cs.Hq;
  std::vector<unsigned char> mbool(static_cast<std::size_t>(mplanes * cs.M * cs.N + 1), 1);
  std::vector<T> mfloat(static_cast<std::size_t>(mplanes * cs.M * cs.N + 1), T(0));
  std::uniform_real_distribution<double> ud(0, 1);
  for (std::size_t i = 0; i + 1 < mbool.size(); ++i) {
    const double u = ud(rng);
    mbool[i] = u < 0.7;
    mfloat[i] = static_cast<T>(u < 0.2 ? -kInf : 2 * u - 1);
  }
  if (cs.fully_masked_row >= 0)
    for (i64 p = 0; p < mplanes; ++p)
      for (i64 j = 0; j < cs.N; ++j) {
        const std::size_t at =
            static_cast<std::size_t>((p * cs.M + cs.fully_masked_row) * cs.N + j);
        mbool[at] = 0;
        mfloat[at] = static_cast<T>(-kInf);
      }

  // Operands [1, 1, 1, 1, B, H, rows, cols] (batch_rank 1, rank kMaxDims),
  // as the front end builds them.
  const DType dt = std::is_same_v<T, float> ? DType::f32 : DType::f64;
  auto operand = [](void* data, DType odt, const i64(&shape)[4], const i64(&strides)[4]) {
    strata::Operand x;
    x.data = data;
    x.dtype = odt;
    x.rank = strata::kMaxDims;
    for (int i = 0; i < strata::kMaxDims - 4; ++i) x.shape[i] = 1;
    std::copy(shape, shape + 4, x.shape + strata::kMaxDims - 4);
    std::copy(strides, strides + 4, x.strides + strata::kMaxDims - 4);
    return x;
  };
  AttentionArgs a;
  a.batch_rank = 1;
  a.batch_shape[0] = cs.B;
  std::tie(a.Hq, a.Hkv, a.M, a.N, a.d, a.dv) = std::tie(cs.Hq, cs.Hkv, cs.M, cs.N, cs.d, cs.dv);
  a.q = operand(q.ptr(), dt, q.shape, q.strides);
  a.k = operand(k.ptr(), dt, k.shape, k.strides);
  a.v = operand(v.ptr(), dt, v.shape, v.strides);
  a.out = operand(out.ptr(), dt, out.shape, out.strides);
  a.lse = operand(lse.data(), dt, {cs.B, cs.Hq, cs.M, 1}, {cs.Hq * cs.M, cs.M, 1, 0});
  const i64 mask_shape[4] = {cs.B, cs.Hq, cs.M, cs.N};
  if (cs.mask == MaskKind::none) {
    a.mask = operand(nullptr, DType::boolean, mask_shape, {0, 0, 0, 0});
  } else {
    const i64 ms[4] = {cs.mask_bcast ? 0 : cs.Hq * cs.M * cs.N, cs.mask_bcast ? 0 : cs.M * cs.N,
                       cs.N, 1};
    a.mask = cs.mask == MaskKind::boolean ? operand(mbool.data(), DType::boolean, mask_shape, ms)
                                          : operand(mfloat.data(), dt, mask_shape, ms);
  }
  a.scale = cs.scale != 0 ? cs.scale : 1.0 / std::sqrt(static_cast<double>(cs.d));
  a.band_lo = cs.band_lo;
  a.band_hi = cs.band_hi;

  const strata::Registry& reg = strata::Registry::get();
  const auto found =
      reg.find(reg.op_id("softmax_attention"),
               reg.resolve_backend("test", "cpu", strata::Device::cpu()), a.dtype(), a);
  REQUIRE(found.info->name == "cpu.attention.online_softmax");
  found.run(a);

  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  const i64 group = cs.Hq / cs.Hkv;
  std::vector<double> s(static_cast<std::size_t>(cs.N));
  for (i64 b = 0; b < cs.B; ++b)
    for (i64 h = 0; h < cs.Hq; ++h)
      for (i64 i = 0; i < cs.M; ++i) {
        const i64 hk = h / group;
        const std::size_t mrow =
            static_cast<std::size_t>(((cs.mask_bcast ? 0 : b * cs.Hq + h) * cs.M + i) * cs.N);
        double mx = -kInf;
        bool any_nan = false;
        for (i64 j = 0; j < cs.N; ++j) {
          bool keep = j >= i + cs.band_lo && j <= i + cs.band_hi;
          double bias = 0;
          if (cs.mask == MaskKind::boolean) keep = keep && mbool[mrow + j];
          if (cs.mask == MaskKind::additive) bias = mfloat[mrow + j];
          double dot = 0;
          for (i64 c = 0; c < cs.d; ++c)
            dot += static_cast<double>(q.at(b, h, i, c)) * static_cast<double>(k.at(b, hk, j, c));
          const double sc = a.scale * dot + bias;
          s[static_cast<std::size_t>(j)] = keep ? sc : -kInf;
          if (keep && std::isnan(sc)) any_nan = true;
          if (keep && sc > mx) mx = sc;
        }
        const double lse_got = lse[static_cast<std::size_t>((b * cs.Hq + h) * cs.M + i)];
        CAPTURE(b, h, i);
        if (any_nan) {
          for (i64 c = 0; c < cs.dv; ++c) CHECK(std::isnan(out.at(b, h, i, c)));
          continue;
        }
        if (mx == -kInf) {  // nothing kept
          for (i64 c = 0; c < cs.dv; ++c) CHECK(out.at(b, h, i, c) == T(0));
          CHECK(lse_got == -kInf);
          continue;
        }
        double l = 0;
        for (double& x : s) l += x = std::exp(x - mx);
        for (i64 c = 0; c < cs.dv; ++c) {
          double o = 0;
          for (i64 j = 0; j < cs.N; ++j)
            o += s[static_cast<std::size_t>(j)] * static_cast<double>(v.at(b, hk, j, c));
          o /= l;
          const double got = out.at(b, h, i, c);
          CAPTURE(c, o, got);
          REQUIRE(std::abs(got - o) <= tol * (1 + std::abs(o)));
        }
        const double lse_ref = mx + std::log(l);
        CAPTURE(lse_ref, lse_got);
        REQUIRE(std::abs(lse_got - lse_ref) <= tol * (1 + std::abs(lse_ref)));
      }
  // Nothing outside the views was written.
  i64 guards = 0;
  for (const T& x : out.mem) guards += x == guard;
  i64 view_elems = cs.B * cs.Hq * cs.M * cs.dv;
  CHECK(static_cast<i64>(out.mem.size()) - guards == view_elems);
  for (std::size_t i = static_cast<std::size_t>(cs.B * cs.Hq * cs.M); i < lse.size(); ++i)
    CHECK(lse[i] == guard);
}

// Runs `f` once for every instruction set this machine can run.
template <class F>
void for_each_isa(F&& f) {
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    float x = -1.f, y = 0.f;
    if (!strata::cpu::fast_exp2_for_test(isa, &x, &y, 1)) continue;
    INFO("instruction set " << isa);
    strata::cpu::cap_isa_for_test(isa);
    REQUIRE(std::string(strata::cpu::isa_name()) == isa);
    f();
  }
  strata::cpu::cap_isa_for_test(nullptr);
}

std::vector<Case> sweep() {
  std::vector<Case> cases;
  std::uint64_t seed = 100;
  auto add = [&](Case c) {
    c.seed = seed++;
    cases.push_back(c);
  };
  // Shapes: decode rows (1-4), partial tiles, d and dv off the vector width.
  for (auto [M, N, d, dv] : std::vector<std::array<i64, 4>>{{1, 1, 1, 1},
                                                            {2, 7, 3, 5},
                                                            {3, 33, 16, 16},
                                                            {4, 130, 64, 64},
                                                            {5, 9, 7, 9},
                                                            {33, 65, 64, 64},
                                                            {64, 96, 32, 64},
                                                            {65, 97, 100, 33},
                                                            {129, 200, 257, 17}}) {
    Case c;
    c.M = M, c.N = N, c.d = d, c.dv = dv;
    add(c);
  }
  // Layouts, batch broadcast, GQA.
  for (Layout l : {Layout::transposed, Layout::gapped, Layout::flipped}) {
    for (i64 M : {1, 3, 70}) {
      Case c;
      c.B = 2, c.Hq = 4, c.Hkv = 2, c.M = M, c.N = 150, c.d = 24, c.dv = 20;
      c.lq = c.lk = c.lv = c.lo = l;
      add(c);
      c.lq = Layout::contiguous, c.lo = Layout::gapped;  // only k / v strided
      add(c);
    }
  }
  {
    Case c;
    c.B = 3, c.Hq = 2, c.Hkv = 1, c.M = 40, c.N = 77, c.d = 16, c.dv = 8;
    c.lk = c.lv = Layout::bcast_batch;
    add(c);
    c.M = 2;
    add(c);
  }
  // Bands: causal bottom-right, top-left, window, empty band.
  for (i64 M : {1, 2, 50, 130}) {
    const i64 N = 140;
    Case c;
    c.M = M, c.N = N, c.d = 32, c.dv = 32, c.Hq = 2, c.Hkv = 2;
    c.band_hi = N - M;  // causal, bottom-right
    add(c);
    c.band_hi = 0;  // causal, top-left
    add(c);
    c.band_lo = N - M - 5, c.band_hi = N - M + 3;  // window
    add(c);
    c.band_lo = 2, c.band_hi = 1;  // empty: every row fully masked
    add(c);
  }
  // Masks, with a fully masked row, per head or broadcast.
  for (MaskKind mk : {MaskKind::boolean, MaskKind::additive})
    for (i64 M : {1, 4, 67})
      for (bool bc : {false, true}) {
        Case c;
        c.B = 2, c.Hq = 2, c.Hkv = 1, c.M = M, c.N = 111, c.d = 40, c.dv = 24;
        c.mask = mk, c.mask_bcast = bc, c.fully_masked_row = static_cast<int>(M / 2);
        c.band_hi = c.N - c.M;
        add(c);
      }
  // Split-key path (few rows, many keys), with masks and a custom scale.
  for (i64 M : {1, 3, 64, 100}) {
    Case c;
    c.M = M, c.N = M > 3 ? 1600 : 5000, c.d = 40, c.dv = 24, c.scale = 0.3;
    add(c);
    c.mask = MaskKind::boolean, c.fully_masked_row = 0, c.lk = Layout::transposed;
    add(c);
  }
  // Scores that jump half-way along the keys, by far more than the
  // kernel's lazy-rescaling threshold (and than 2^128 in f32): the blocks
  // after the jump must rescale.
  for (i64 M : {2, 70}) {
    Case c;
    c.M = M, c.N = 1500, c.d = 16, c.dv = 16, c.k_jump = 40;
    add(c);
  }
  // N = 0 and a NaN query row.
  for (i64 M : {1, 9}) {
    Case c;
    c.M = M, c.N = 0, c.d = 8, c.dv = 8;
    add(c);
    c.N = 300, c.nan_row = static_cast<int>(M - 1);
    add(c);
  }
  return cases;
}

}  // namespace

TEST_CASE("cpu attention kernel matches a naive double loop, f32", "[cpu]") {
  omp_set_num_threads(2);
  for_each_isa([] {
    for (const Case& c : sweep()) run_case<float>(c);
  });
}

TEST_CASE("cpu attention kernel matches a naive double loop, f64", "[cpu]") {
  omp_set_num_threads(2);
  for_each_isa([] {
    for (const Case& c : sweep()) run_case<double>(c);
  });
}

TEST_CASE("cpu attention kernel on one thread and on many", "[cpu]") {
  for (int threads : {1, 3, 8}) {
    INFO("threads=" << threads);
    omp_set_num_threads(threads);
    Case c;
    c.M = 1, c.N = 9000, c.d = 32, c.dv = 32, c.seed = 7;
    run_case<float>(c);
    c.M = 200, c.N = 300, c.Hq = 3, c.Hkv = 3, c.band_hi = 100;
    run_case<float>(c);
  }
  omp_set_num_threads(2);
}

// Long key ranges with wide heads: the split-key chunks are cut on the
// kernel's own key block (96 keys at d = dv = 128 f32, not the nominal 192),
// the merge is shared out by row blocks, and K + V exceed the size above
// which the next block is prefetched a few lines per tile (row-wise,
// column-wise for a transposed K, or not at all for gapped layouts).
TEST_CASE("cpu attention kernel, long keys: split chunks and streamed K/V", "[cpu]") {
  for (int threads : {1, 2, 3}) {
    INFO("threads=" << threads);
    omp_set_num_threads(threads);
    for_each_isa([] {
      Case c;
      c.M = 24, c.N = 8500, c.d = 128, c.dv = 128, c.seed = 11;
      run_case<float>(c);
      c.lk = Layout::transposed, c.band_hi = c.N - c.M - 3000;  // kcol, causal-trimmed keys
      run_case<float>(c);
      c.M = 20, c.N = 8300, c.d = 100, c.dv = 72, c.band_hi = strata::kNoLimit;
      c.lk = c.lv = Layout::gapped;
      run_case<float>(c);
      run_case<double>(c);
    });
  }
  omp_set_num_threads(2);
}

// A K whose head dim is not unit-stride, read by several query blocks, is
// copied row-major once per call in 256-key tiles (attention_cpu.cpp,
// pack_k): several tiles, a partial last one, GQA heads and every such layout.
TEST_CASE("cpu attention kernel, strided K read by several query blocks", "[cpu]") {
  for (int threads : {1, 3}) {
    INFO("threads=" << threads);
    omp_set_num_threads(threads);
    for_each_isa([] {
      for (Layout lk : {Layout::transposed, Layout::gapped, Layout::flipped}) {
        Case c;
        c.B = 2, c.Hq = 4, c.Hkv = 2, c.M = 150, c.N = 700, c.d = 72, c.dv = 40, c.seed = 23;
        c.lk = lk;
        run_case<float>(c);
        c.band_hi = c.N - c.M;  // causal: query blocks read different key ranges
        run_case<double>(c);
      }
    });
  }
  omp_set_num_threads(2);
}

template <class T>
void check_fast_exp2() {
  // Relative error bounds (see backends/cpu/attention/simd.hpp): 1.7 ulp measured for
  // f32, truncation 4e-18 plus rounding for f64; checked with margin.
  const double bound = std::is_same_v<T, float> ? 2.5e-7 : 5e-16;
  const double lo = std::is_same_v<T, float> ? -125.0 : -1020.0;
  std::vector<T> x;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> wide(lo, 0.0), narrow(-1.0, 0.0);
  for (int i = 0; i < 200000; ++i) x.push_back(static_cast<T>(i % 2 ? wide(rng) : narrow(rng)));
  for (int n = 0; n >= static_cast<int>(lo); --n) {  // around the integers
    x.push_back(static_cast<T>(n));
    x.push_back(static_cast<T>(n + 0.5));
    x.push_back(std::nextafter(static_cast<T>(n + 0.5), T(0)));
    x.push_back(std::nextafter(static_cast<T>(n - 0.5), T(0)));
  }
  x.erase(std::remove_if(x.begin(), x.end(), [&](T v) { return v < lo; }), x.end());
  x.push_back(T(-0.0));
  const std::size_t n_checked = x.size();
  // Flushed to exactly 0 below the limit; NaN stays NaN.
  for (double s : {lo - 0.5, lo - 1, -2000.0, -1e30, -kInf}) x.push_back(static_cast<T>(s));
  x.push_back(std::numeric_limits<T>::quiet_NaN());
  std::vector<T> y(x.size());
  int isas = 0;
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    if (!strata::cpu::fast_exp2_for_test(isa, x.data(), y.data(), static_cast<i64>(x.size())))
      continue;
    ++isas;
    INFO("isa=" << isa);
    double worst = 0;
    for (std::size_t i = 0; i < n_checked; ++i) {
      const double ref = std::exp2(static_cast<double>(x[i]));
      worst = std::max(worst, std::abs(static_cast<double>(y[i]) - ref) / ref);
    }
    CAPTURE(worst);
    CHECK(worst <= bound);
    CHECK(worst > 0);  // the check compares something
    for (std::size_t i = n_checked; i + 1 < x.size(); ++i) CHECK(y[i] == T(0));
    CHECK(std::isnan(y.back()));
  }
  CHECK(isas >= 1);
}

TEST_CASE("cpu fast exp2 error bound against std::exp2, f32", "[cpu]") { check_fast_exp2<float>(); }
TEST_CASE("cpu fast exp2 error bound against std::exp2, f64", "[cpu]") {
  check_fast_exp2<double>();
}
