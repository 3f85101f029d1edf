#pragma once
// Shared pieces of the softmax_attention kernels: the by-value kernel
// argument, 16-byte vector types, cp.async wrappers and per-dtype maths.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/pdl_launch.cuh"
#include "strata/attention_args.hpp"
#include "strata/dtype.hpp"

namespace strata::cuda {

// Everything a kernel needs, passed by value. `a` is the front end's struct
// untouched; the rest is derived once on the host by the launcher.
struct AttnParams {
  AttentionArgs a;
  double scale_log2 = 0;   // scale * log2(e): scores are kept in base 2
  std::int64_t group = 1;  // Hq / Hkv
  std::int64_t bh = 1;     // batch_count * Hq
  std::int64_t m_tiles = 1, dv_chunks = 1, splits = 1, keys_per_split = 0;
  int mask_kind = 0;  // 0 none, 1 bool, 2 same dtype as q (additive)
  // 16-byte vector loads/stores allowed (unit last-dim stride, every other
  // stride and the base aligned, the last dim a multiple of the vector).
  bool q_vec = false, k_vec = false, v_vec = false, o_vec = false;
  // Rows contiguous instead (unit row stride, aligned columns: transposed
  // or column-major inputs): 16-byte loads across rows.
  bool q_tvec = false, k_tvec = false, v_tvec = false;
  // Split-KV partials: acc [splits][bh][M][dv] and (m, l) [splits][bh][M][2],
  // in the kernel's dtype; m in base 2.
  void* part_acc = nullptr;
  void* part_ml = nullptr;
};

constexpr int kMaskNone = 0, kMaskBool = 1, kMaskFloat = 2;

template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = float4;
  static constexpr int n = 4;
};
template <>
struct Vec<double> {
  using type = double2;
  static constexpr int n = 2;
};

template <class T>
__device__ __forceinline__ T vget(const typename Vec<T>::type& v, int i);
template <>
__device__ __forceinline__ float vget<float>(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
template <>
__device__ __forceinline__ double vget<double>(const double2& v, int i) {
  return i == 0 ? v.x : v.y;
}

// Storage types S (what q, k, v, out and a float mask hold) beside the
// compute type T (registers, shared memory, split-KV partials, lse):
// S = T for f32 and f64, S = __nv_bfloat16 or __half with T = float. The
// CUDA half types name their dtype through the host types of the same bits.
template <class S>
struct StorageDType : dtype_of<S> {};
template <>
struct StorageDType<__nv_bfloat16> : dtype_of<strata::bfloat16> {};
template <>
struct StorageDType<__half> : dtype_of<strata::half> {};

// S -> T on load and T -> S on the final store, by the types' own
// conversions: for bf16/f16 those are __bfloat162float / __half2float
// (exact: every bf16/f16 value is a float) and, from float,
// __float2bfloat16 / __float2half (rounded once, to nearest even).
template <class T, class S>
__device__ __forceinline__ T to_compute(S x) {
  return static_cast<T>(x);
}
template <class S, class T>
__device__ __forceinline__ S to_storage(T x) {
  return static_cast<S>(x);
}

// N adjacent elements of S read with one load (N * sizeof(S) bytes, aligned
// to that): the decode kernel's per-lane vector for storage narrower than T.
template <class S, int N>
struct alignas(N * sizeof(S)) SVec {
  S e[N];
};

__device__ __forceinline__ float fexp2(float x) { return exp2f(x); }
__device__ __forceinline__ double fexp2(double x) { return exp2(x); }
__device__ __forceinline__ float flog2(float x) { return log2f(x); }
__device__ __forceinline__ double flog2(double x) { return log2(x); }
// max that ignores NaN (a NaN score must not become the running max; it
// still reaches the output through exp2).
__device__ __forceinline__ float fmax_(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double fmax_(double a, double b) { return fmax(a, b); }

template <class T>
__device__ __forceinline__ T neg_inf();
template <>
__device__ __forceinline__ float neg_inf<float>() {
  return __int_as_float(0xff800000);
}
template <>
__device__ __forceinline__ double neg_inf<double>() {
  return __longlong_as_double(static_cast<long long>(0xfff0000000000000ULL));
}

// 16-byte global->shared copy; src_bytes 0 writes zeros without reading.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
               "r"(src_bytes));
}
// 4-byte global->shared copy (any alignment, any stride), cached in L1 so
// that neighbouring 4-byte reads of one sector hit; src_bytes 0 writes zero.
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Element offsets of (batch-head `bh`) for each tensor.
struct HeadOffsets {
  std::int64_t q, k, v, o, l, mk;
};
__host__ __device__ inline HeadOffsets head_offsets(const AttnParams& p, std::int64_t bh) {
  const AttentionArgs& a = p.a;
  const std::int64_t b = bh / a.Hq, h = bh % a.Hq, hk = h / p.group;
  HeadOffsets o;
  o.q = attn::head_offset(a.q, b, h);
  o.k = attn::head_offset(a.k, b, hk);
  o.v = attn::head_offset(a.v, b, hk);
  o.o = attn::head_offset(a.out, b, h);
  o.l = attn::head_offset(a.lse, b, h);
  o.mk = attn::head_offset(a.mask, b, h);
  return o;
}

// Whether key j is kept for query row i by the band and the mask; for a
// float mask (held in S, q's storage type), *bias receives the additive term
// (in base 2, in T).
template <class T, class S = T>
__device__ __forceinline__ bool key_kept(const AttnParams& p, const void* mask_head, std::int64_t i,
                                         std::int64_t j, T* bias) {
  const AttentionArgs& a = p.a;
  if (j < i + a.band_lo || j > i + a.band_hi) return false;
  if (p.mask_kind == kMaskBool) {
    return static_cast<const unsigned char*>(
               mask_head)[i * attn::row_stride(a.mask) + j * attn::col_stride(a.mask)] != 0;
  }
  if (p.mask_kind == kMaskFloat) {
    *bias = to_compute<T>(static_cast<const S*>(
                mask_head)[i * attn::row_stride(a.mask) + j * attn::col_stride(a.mask)]) *
            static_cast<T>(1.4426950408889634);
  }
  return true;
}

// What one block of a streaming kernel works on: blockIdx.x decoded as
// (query tile, key split, output-column chunk, batch-head), the head's inputs,
// and its keys: the split's range cut to the band of its rows, starting on a
// BN boundary (keys before the band are masked per element; the boundary keeps
// row-contiguous loads 16-byte aligned).
template <class T>
struct BlockWork {
  std::int64_t split, dc, bh;
  std::int64_t m0, row_last;    // first and last query row
  std::int64_t j_begin, j_end;  // keys [j_begin, j_end)
  HeadOffsets off;
  const T *q, *k, *v;
  const void* mask;  // this head's mask (bool or T), null without one
};

template <class T, int BM, int BN>
__device__ __forceinline__ BlockWork<T> block_work(const AttnParams& p) {
  const AttentionArgs& a = p.a;
  BlockWork<T> w;
  std::int64_t bid = blockIdx.x;
  const std::int64_t mt = bid % p.m_tiles;
  bid /= p.m_tiles;
  w.split = bid % p.splits;
  bid /= p.splits;
  w.dc = bid % p.dv_chunks;
  w.bh = bid / p.dv_chunks;
  w.off = head_offsets(p, w.bh);
  w.q = static_cast<const T*>(a.q.data) + w.off.q;
  w.k = static_cast<const T*>(a.k.data) + w.off.k;
  w.v = static_cast<const T*>(a.v.data) + w.off.v;
  w.mask = nullptr;
  if (p.mask_kind == kMaskBool) w.mask = static_cast<const unsigned char*>(a.mask.data) + w.off.mk;
  if (p.mask_kind == kMaskFloat) w.mask = static_cast<const T*>(a.mask.data) + w.off.mk;
  w.m0 = mt * BM;
  w.row_last = min(w.m0 + BM, a.M) - 1;
  const std::int64_t j0 = w.split * p.keys_per_split;
  w.j_begin = max(j0, (w.m0 + a.band_lo) / BN * BN);
  w.j_end = min(min(a.N, j0 + p.keys_per_split), w.row_last + a.band_hi + 1);
  return w;
}

// The end of a streaming kernel for one query row held by one thread: with a
// single split, the normalised row to out and its lse (base e); with several,
// the unnormalised row and (m, l) to the split partials for the merge. The
// thread holds output columns col0 + cstep * g + e (e < VEC) in o[VEC * g + e];
// `owner` is the one thread of the row that writes its scalars.
template <class T, int NO>
__device__ __forceinline__ void store_row(const AttnParams& p, const HeadOffsets& off,
                                          std::int64_t bh, std::int64_t split, std::int64_t row,
                                          const T (&o)[NO], T m, T l, std::int64_t col0,
                                          std::int64_t cstep, bool owner) {
  using V = typename Vec<T>::type;
  constexpr int VEC = Vec<T>::n;
  static_assert(NO % VEC == 0, "output columns in vector groups");
  const AttentionArgs& a = p.a;
  const bool final_out = p.splits == 1;
  // l == 0 only for a row with no kept key (o is 0 too); a NaN l stays NaN.
  const T inv = final_out ? (l == T(0) ? T(0) : T(1) / l) : T(1);
  const std::int64_t r = (split * p.bh + bh) * a.M + row;  // partials row
  T* dst;
  std::int64_t cs;
  bool vec_ok;
  if (final_out) {
    dst = static_cast<T*>(a.out.data) + off.o + row * attn::row_stride(a.out);
    cs = attn::col_stride(a.out);
    vec_ok = p.o_vec;
  } else {
    dst = static_cast<T*>(p.part_acc) + r * a.dv;
    cs = 1;
    vec_ok = (a.dv % VEC) == 0;
  }
#pragma unroll
  for (int g = 0; g < NO / VEC; ++g) {
    const std::int64_t col = col0 + cstep * g;
    if (vec_ok && col + VEC <= a.dv) {
      V w;
      T* wp = reinterpret_cast<T*>(&w);
#pragma unroll
      for (int e = 0; e < VEC; ++e) wp[e] = o[VEC * g + e] * inv;
      *reinterpret_cast<V*>(dst + col) = w;
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        if (col + e < a.dv) dst[(col + e) * cs] = o[VEC * g + e] * inv;
    }
  }
  if (!owner) return;
  if (final_out) {
    if (a.lse.data)
      static_cast<T*>(a.lse.data)[off.l + row * attn::row_stride(a.lse)] =
          l == T(0) ? neg_inf<T>() : (m + flog2(l)) * static_cast<T>(0.6931471805599453);
  } else {
    static_cast<T*>(p.part_ml)[2 * r] = m;
    static_cast<T*>(p.part_ml)[2 * r + 1] = l;
  }
}

}  // namespace strata::cuda
