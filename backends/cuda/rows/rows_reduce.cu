// cuda sum, mean, max, argmax (out has stride 0 along the row; argmax's is
// i64), softmax and log_softmax, on f32, f64, f16, bf16; f16/bf16/f32
// accumulate in f32 (per-thread partials, then a shuffle tree), f64 in f64.
// The reductions run reduce_kernel below, except sum and mean over a leading
// dim of a row-major tensor (column_sum.cuh); softmax and log_softmax the
// kernels of softmax_kernels.cuh (or rows_reg.cu's):
//  * 16-bit softmax rows of 2048, 4096 or 8192 elements: reg4's kernel
//    (rows_reg.cu); other lengths, and log_softmax, the `fused` kernel. One
//    row per group: rows staged ahead measured slower here, and so did the
//    register-pipelined candidates;
//  * f32: softmax_fast;
//  * f64 and layouts the fast path does not take: softmax_kernel.
// How each form measured against the others: docs/log/ops.md, "16-bit rows
// and the transposed add" and "Rows16 reg". STRATA_ROWS_VARIANT selects the
// other forms in a tuning build (backends/cuda/lab/rows/).
#include "cuda/rows/column_sum.cuh"
#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "cuda/rows/rows_reg.cuh"
#include "cuda/rows/rows_variant.hpp"
#include "cuda/rows/softmax_kernels.cuh"
#if STRATA_TUNING
#include "cuda/lab/rows/rows_candidates.hpp"
#endif

namespace strata::cuda {
namespace {

enum class Reduction { sum, mean, max, argmax };

// (value, index) of the first maximum, a NaN larger than anything.
template <class C>
__device__ __forceinline__ bool better(C va, std::int64_t ia, C vb, std::int64_t ib) {
  const bool na = va != va, nb = vb != vb;
  if (na != nb) return na;
  if (!na && va != vb) return va > vb;
  return ia < ib;
}

template <Reduction OP, class T, int G>
__global__ void __launch_bounds__(kRowThreads) reduce_kernel(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  __shared__ C sh[G / 32];
  __shared__ std::int64_t shi[G / 32];
  for_group_rows<G>(p, [&](int lane, const RowOffsets& off) {
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    C v[kCap];
    if constexpr (OP == Reduction::sum || OP == Reduction::mean) {
      C s = 0;
      for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
        load_tile<T, G>(x, p.row_stride[1], p.n, t0, lane, p.vec, v);
#pragma unroll
        for (int i = 0; i < kCap / VEC; ++i)
#pragma unroll
          for (int j = 0; j < VEC; ++j)
            if (tile_elem<G, VEC>(t0, lane, i, j) < p.n) s += v[i * VEC + j];
      }
      s = group_reduce<G>(s, SumOp{}, sh);
      if (OP == Reduction::mean) s = s / C(p.n);
      if (lane == 0) reinterpret_cast<T*>(p.ptr[0])[off[0]] = cvt<T>(s);
    } else {
      C best = 0;
      std::int64_t bi = INT64_MAX;
      for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
        load_tile<T, G>(x, p.row_stride[1], p.n, t0, lane, p.vec, v);
#pragma unroll
        for (int i = 0; i < kCap / VEC; ++i)
#pragma unroll
          for (int j = 0; j < VEC; ++j) {
            const std::int64_t e = tile_elem<G, VEC>(t0, lane, i, j);
            if (e < p.n && (bi == INT64_MAX || better(v[i * VEC + j], e, best, bi))) {
              best = v[i * VEC + j];
              bi = e;
            }
          }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const C ob = __shfl_xor_sync(0xffffffffu, best, o);
        const std::int64_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (oi != INT64_MAX && (bi == INT64_MAX || better(ob, oi, best, bi))) {
          best = ob;
          bi = oi;
        }
      }
      if constexpr (G > 32) {
        __syncthreads();
        if (threadIdx.x % 32 == 0) {
          sh[threadIdx.x / 32] = best;
          shi[threadIdx.x / 32] = bi;
        }
        __syncthreads();
        best = sh[0];
        bi = shi[0];
        for (int k = 1; k < G / 32; ++k)
          if (shi[k] != INT64_MAX && (bi == INT64_MAX || better(sh[k], shi[k], best, bi))) {
            best = sh[k];
            bi = shi[k];
          }
      }
      if (lane == 0) {
        if constexpr (OP == Reduction::max)
          reinterpret_cast<T*>(p.ptr[0])[off[0]] = cvt<T>(best);
        else
          reinterpret_cast<std::int64_t*>(p.ptr[0])[off[0]] = bi == INT64_MAX ? 0 : bi;
      }
    }
  });
}

template <Reduction OP, class T>
void reduce(const IterArgs& a) {
  // A sum over a leading dim (x's row strided, its innermost outer dim
  // unit-stride): threads along the columns (column_sum.cuh).
  if constexpr (OP == Reduction::sum || OP == Reduction::mean)
    if (launch_column_sum<T, OP == Reduction::mean>(a)) return;
  const RowParams p = make_row_params<T>(a, 0b10);  // x (out has stride 0 along the row)
  if (p.rows == 0) return;
  launch_group_rows(&reduce_kernel<OP, T, 32>, &reduce_kernel<OP, T, kRowThreads>, p,
                    static_cast<cudaStream_t>(a.stream));
}

template <bool Log, class T>
void softmax(const IterArgs& a) {
  const RowParams p = make_row_params<T>(a, 0b11);  // out, x
  if (p.rows == 0 || p.n == 0) return;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  if constexpr (sizeof(T) == 2) {
    // STRATA_ROWS_VARIANT, checked on the first call: a candidate's name
    // is an error in a build without the lab.
    [[maybe_unused]] const RowsVariant variant = rows_variant();
#if STRATA_TUNING
    if (lab::softmax16_candidate<Log, T>(variant, p, st)) return;
#endif
    if (!Log && fastrow::softmax_reg4<T>(p, st)) return;
    if (launch_softmax_fused<Log, T>(p, st)) return;
  } else {
    if (launch_softmax_fast<Log, T>(p, st)) return;
  }
  launch_softmax_general<Log, T>(p, st);
}

}  // namespace

std::vector<EwEntry> row_reduce_entries() {
  std::vector<EwEntry> v;
  for_float_dtypes([&](DType dt, auto t) {
    using T = typename decltype(t)::type;
    v.push_back({"sum", dt, &reduce<Reduction::sum, T>});
    v.push_back({"mean", dt, &reduce<Reduction::mean, T>});
    v.push_back({"max", dt, &reduce<Reduction::max, T>});
    v.push_back({"argmax", dt, &reduce<Reduction::argmax, T>});
    v.push_back({"softmax", dt, &softmax<false, T>});
    v.push_back({"log_softmax", dt, &softmax<true, T>});
  });
  return v;
}

}  // namespace strata::cuda
