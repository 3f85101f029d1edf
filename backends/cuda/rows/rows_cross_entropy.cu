// cuda cross_entropy and cross_entropy_backward (operands: docs/guide/ops.md,
// "cross_entropy") on f32, f64, f16, bf16 logits, read as they are and
// computed in f32 (f64 for f64). A warp per row for rows of up to 1024
// elements, a 256-thread block per row beyond (launch_group_rows), walking
// the row in rows.cuh's tiles: 16-byte vector loads when the walked rows
// are unit-stride and aligned, else element by element through the strides.
//
// Forward: the row is read once. Each thread keeps a running max and sum of
// exp(x - max), rescaled per tile (an online logsumexp); the group then
// reduces the maxima, the rescaled sums and a NaN flag in a fixed order
// (deterministic, no atomics), and its first thread reads x[t] and writes
// the loss and the (lse, valid) pair. sum and mean are the front end's sum
// over these per-row losses.
// Backward: every element once, g (exp(x - lse) - [j == t]) written, or
// added to grad_logits with accumulate; the probabilities are never stored.
//
// The targets are checked first as embedding checks its ids (first_bad_id,
// rows_ids.cu, which synchronises the stream); while the stream is being
// captured nothing may synchronise, so there is no check: a bad target's
// row gets a NaN loss and a NaN gradient, and nothing outside the logits is
// read.
#include <cmath>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "cuda/rows/rows_fused.cuh"
#include "cuda/rows/rows_ids.cuh"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

// The end of a row of the forward, once each thread of the group holds its
// running max m, its sum s of exp(x - m) and its NaN flag: the group
// reduces them in a fixed order and its first thread writes the loss and
// the (lse, valid) pair.
template <class C, class I, int G, class T>
__device__ __forceinline__ void finish_row(const RowParams& p,
                                           const std::int64_t (&off)[kMaxOperands], const T* x, C m,
                                           C s, bool nan, int lane, C* sh) {
  const std::int64_t ignore = p.iparam[0];
  const C rm = group_reduce<G>(m, MaxOp{}, sh);
  s = m == -INFINITY ? C(0) : s * fn::m_exp(m - rm);
  const C rs = group_reduce<G>(s, SumOp{}, sh);
  const C any_nan = group_reduce<G>(nan ? C(1) : C(0), MaxOp{}, sh);
  if (lane != 0) return;
  // A row of -inf: lse -inf (and the loss -inf - -inf = NaN).
  const C lse = any_nan != C(0) ? C(NAN) : rm == -INFINITY ? rm : rm + fn::m_log(rs);
  const std::int64_t t = load_id<I>(p.ptr[2], off[2]);
  C loss = 0;
  if (t != ignore)  // out of range only while capturing (checked otherwise)
    loss = t >= 0 && t < p.n ? lse - cvt<C>(x[t * p.row_stride[1]]) : C(NAN);
  C* pair = reinterpret_cast<C*>(p.ptr[3]) + off[3];
  pair[0] = lse;
  pair[1] = t == ignore ? C(0) : C(1);
  reinterpret_cast<C*>(p.ptr[0])[off[0]] = loss;
}

template <class T, class I, int G>
__global__ void __launch_bounds__(kRowThreads) forward_kernel(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  __shared__ C sh[G / 32];
  for_group_rows<G>(p, [&](int lane, const RowOffsets& off) {
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    C v[kCap];
    C m = -INFINITY, s = 0;
    bool nan = false;
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      load_tile<T, G>(x, p.row_stride[1], p.n, t0, lane, p.vec, v);
      C tm = m;
#pragma unroll
      for (int i = 0; i < kCap / VEC; ++i)
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (tile_elem<G, VEC>(t0, lane, i, j) < p.n) {
            tm = MaxOp{}(tm, v[i * VEC + j]);
            nan = nan || v[i * VEC + j] != v[i * VEC + j];
          }
      if (tm == -INFINITY) continue;  // only -inf (or NaN, flagged) so far: adds 0
      s *= fn::m_exp(m - tm);
      m = tm;
#pragma unroll
      for (int i = 0; i < kCap / VEC; ++i)
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (tile_elem<G, VEC>(t0, lane, i, j) < p.n) s += fn::m_exp(v[i * VEC + j] - m);
    }
    finish_row<C, I, G>(p, off, x, m, s, nan, lane, sh);
  });
}

template <class T, class I, int G>
__global__ void __launch_bounds__(kRowThreads) backward_kernel(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  const std::int64_t ignore = p.iparam[0];
  const bool acc = p.iparam[1] != 0;
  for_group_rows<G>(p, [&](int lane, const RowOffsets& off) {
    const std::int64_t t = load_id<I>(p.ptr[2], off[2]);
    if (t == ignore && acc) return;  // nothing to add
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    T* y = reinterpret_cast<T*>(p.ptr[0]) + off[0];
    const C* pair = reinterpret_cast<const C*>(p.ptr[3]) + off[3];
    const C lse = pair[0];
    // Out of range only while capturing (checked otherwise): a NaN row.
    const C g = t >= 0 && t < p.n ? pair[1] : C(NAN);
    C v[kCap], o[kCap];
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      if (t == ignore) {
#pragma unroll
        for (int k = 0; k < kCap; ++k) v[k] = C(0);
        store_tile<T, G>(y, p.row_stride[0], p.n, t0, lane, p.vec, v);
        continue;
      }
      load_tile<T, G>(x, p.row_stride[1], p.n, t0, lane, p.vec, v);
      if (acc) load_tile<T, G>(y, p.row_stride[0], p.n, t0, lane, p.vec, o);
#pragma unroll
      for (int i = 0; i < kCap / VEC; ++i)
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const int k = i * VEC + j;
          const C hot = tile_elem<G, VEC>(t0, lane, i, j) == t ? C(1) : C(0);
          const C d = g * (fn::m_exp(v[k] - lse) - hot);
          v[k] = acc ? o[k] + d : d;
        }
      store_tile<T, G>(y, p.row_stride[0], p.n, t0, lane, p.vec, v);
    }
  });
}

// ---- long contiguous rows (a vocabulary) of f32, f16, bf16 ------------------------
// The general kernels hold a tile of kCap values per thread in registers
// (the backward about 190 registers: one block of 256 threads per SM), too
// few loads in flight to stream the logits at full bandwidth. These hold U
// raw 16-byte vectors per thread instead.
inline constexpr int kFastU = 4;  // 16-byte vectors per thread per step

// Forward: a 256-thread block per row, U vectors per thread per step, the
// online logsumexp of the general kernel per step.
template <class T, class I>
__global__ void __launch_bounds__(kRowThreads) forward_fast(RowParams p) {
  constexpr int VEC = 16 / sizeof(T);
  __shared__ float sh[kRowThreads / 32];
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const std::int64_t nvec = p.n / VEC;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    float m = -INFINITY, s = 0;
    bool nan = false;
    for (std::int64_t v0 = threadIdx.x; v0 < nvec; v0 += kRowThreads * kFastU) {
      Vec<T, VEC> r[kFastU];
#pragma unroll
      for (int u = 0; u < kFastU; ++u) {
        const std::int64_t v = v0 + std::int64_t(u) * kRowThreads;
        r[u] = v < nvec ? ld_vec<T, VEC>(x + v * VEC) : splat<VEC, T>(cvt<T>(-INFINITY));
      }
      float tm = m;
#pragma unroll
      for (int u = 0; u < kFastU; ++u)
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float e = fastrow::widen(r[u], j);
          tm = MaxOp{}(tm, e);
          nan = nan || e != e;
        }
      if (tm == -INFINITY) continue;  // only -inf (or NaN, flagged) so far: adds 0
      s *= fn::m_exp(m - tm);
      m = tm;
#pragma unroll
      for (int u = 0; u < kFastU; ++u)
#pragma unroll
        for (int j = 0; j < VEC; ++j) s += fn::m_exp(fastrow::widen(r[u], j) - m);
    }
    finish_row<float, I, kRowThreads>(p, off, x, m, s, nan, static_cast<int>(threadIdx.x), sh);
  }
}

// Backward: every element on its own, so the grid is (row chunks of
// kRowThreads * U vectors, rows): U vectors in flight per thread.
template <class T, class I>
__global__ void __launch_bounds__(kRowThreads) backward_fast(RowParams p) {
  constexpr int VEC = 16 / sizeof(T);
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const std::int64_t nvec = p.n / VEC, ignore = p.iparam[0];
  const bool acc = p.iparam[1] != 0;
  const std::int64_t v0 = std::int64_t(blockIdx.x) * kRowThreads * kFastU + threadIdx.x;
  for (std::int64_t row = blockIdx.y; row < p.rows; row += gridDim.y) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const std::int64_t t = load_id<I>(p.ptr[2], off[2]);
    if (t == ignore && acc) continue;  // nothing to add
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    T* y = reinterpret_cast<T*>(p.ptr[0]) + off[0];
    const float* pair = reinterpret_cast<const float*>(p.ptr[3]) + off[3];
    const float lse = pair[0];
    // Out of range only while capturing (checked otherwise): a NaN row.
    const float g = t == ignore ? 0.0f : t >= 0 && t < p.n ? pair[1] : NAN;
    Vec<T, VEC> r[kFastU], o[kFastU];
#pragma unroll
    for (int u = 0; u < kFastU; ++u) {
      const std::int64_t v = v0 + std::int64_t(u) * kRowThreads;
      if (v < nvec) {
        r[u] = ld_vec<T, VEC>(x + v * VEC);
        if (acc) o[u] = ld_vec<T, VEC>(y + v * VEC);
      }
    }
#pragma unroll
    for (int u = 0; u < kFastU; ++u) {
      const std::int64_t v = v0 + std::int64_t(u) * kRowThreads;
      if (v >= nvec) continue;
      Vec<T, VEC> w;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float hot = v * VEC + j == t ? 1.0f : 0.0f;
        // An ignored row writes zeros (g = 0 would give NaN for x = +inf).
        const float d = t == ignore ? 0.0f : g * (fn::m_exp(fastrow::widen(r[u], j) - lse) - hot);
        w.v[j] = cvt<T>(acc ? fastrow::widen(o[u], j) + d : d);
      }
      st_vec<T, VEC>(y + v * VEC, w);
    }
  }
}

// Whether the fast kernels take the call: f32 / f16 / bf16 rows that take
// vectors and are longer than a warp's tile.
template <class T>
bool fast_rows(const RowParams& p) {
  return p.vec && p.n > 32 * kCap;
}

// Every target in [0, V) or ignore_index, before anything is written;
// skipped while the stream is being captured.
void check_targets(const char* op, const IterArgs& a, const RowParams& p, cudaStream_t st) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(st, &capture));
  if (capture != cudaStreamCaptureStatusNone) return;
  const std::int64_t ignore = a.iparam[0];
  const BadId bad =
      first_bad_id(p, 2, a.op[2].dtype, p.n, st, "cross_entropy target check", &ignore);
  if (bad.row >= 0)
    fail(op, "target holds ", bad.id, " at index ", bad.row, ", outside [0, ", p.n,
         ") and not ignore_index (", ignore, ")");
}

// The forward's and backward's launch: p over the operands of `mask`,
// nothing for an empty one, the targets checked on st (op names the op in
// the error), then launch(p, st, I{}) with I the targets' index type.
template <class T, class Launch>
void launch_checked(const IterArgs& a, unsigned mask, const char* op, Launch launch) {
  const RowParams p = make_row_params<T>(a, mask);
  if (p.rows == 0 || p.n == 0) return;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  check_targets(op, a, p, st);
  with_id_type(a.op[2].dtype, [&](auto i) { launch(p, st, i); });
}

template <class T>
void forward(const IterArgs& a) {
  // x (the rest have stride 0 along the row)
  launch_checked<T>(a, 0b10, "cross_entropy", [](const RowParams& p, cudaStream_t st, auto i) {
    using I = decltype(i);
    if constexpr (sizeof(T) < 8) {
      if (fast_rows<T>(p)) {
        launch_row_kernel(&forward_fast<T, I>, row_grid(p.rows, 1), kRowThreads, st, p);
        return;
      }
    }
    launch_group_rows(&forward_kernel<T, I, 32>, &forward_kernel<T, I, kRowThreads>, p, st);
  });
}

template <class T>
void backward(const IterArgs& a) {
  // grad_logits, x
  launch_checked<T>(
      a, 0b11, "cross_entropy_backward", [](const RowParams& p, cudaStream_t st, auto i) {
        using I = decltype(i);
        if constexpr (sizeof(T) < 8) {
          if (fast_rows<T>(p)) {
            const std::int64_t chunk = std::int64_t(kRowThreads) * kFastU * (16 / sizeof(T));
            const dim3 grid(static_cast<unsigned>((p.n + chunk - 1) / chunk),
                            static_cast<unsigned>(p.rows < 65535 ? p.rows : 65535));
            launch_row_kernel(&backward_fast<T, I>, grid, kRowThreads, st, p);
            return;
          }
        }
        launch_group_rows(&backward_kernel<T, I, 32>, &backward_kernel<T, I, kRowThreads>, p, st);
      });
}

}  // namespace

std::vector<EwEntry> row_cross_entropy_entries() {
  std::vector<EwEntry> v;
  for_float_dtypes([&](DType dt, auto t) {
    using T = typename decltype(t)::type;
    v.push_back({"cross_entropy", dt, &forward<T>});
    v.push_back({"cross_entropy_backward", dt, &backward<T>});
  });
  return v;
}

}  // namespace strata::cuda
