#pragma once
// Decoding kernel for few query rows and many keys (memory bound): a block
// owns one query row and one split of the keys; each warp takes U keys at a
// time, every lane holding a slice of q, k and v in registers (16-byte loads
// when the layout allows), dot products reduced by xor shuffles, and an
// online softmax per warp. The warps of a block merge through shared memory.
// With several splits each block writes its partial (acc, m, l); given
// ticket counters, the block that finishes a row's splits last merges them
// in place (merge_splits, attention_merge.cuh), else attn_merge_kernel runs
// after the kernel (attention_launch.cu, "merge_counters").
//
// Storage S (q, k, v, out, a float mask) may be narrower than the compute
// type T: bf16/f16 inputs are read VEC (= Vec<T>::n, 4) elements per lane
// per chunk, i.e. 8-byte loads in the same lane layout as f32, converted to
// T in registers; all arithmetic, the warps' shared-memory merge and the
// split-KV partials are in T, lse is T (f32 for half inputs), and out is
// rounded to S once. With S = T (f32, f64) nothing changes.
//
// Half storage keeps the loaded k and v rows packed (two S per 32-bit
// register, load_row_packed) and widens each pair where it is used (the dot
// product, the P V update): no instruction reads a loaded register before
// every load of the warp's U keys is issued, and U keys cost half the
// registers of widened rows, so the half variants take twice the keys of
// f32 per step (the same bytes in flight). DecodeConvertAtLoad configs
// (tuning only) widen inside load_row as the first version did.
#include <type_traits>

#include "cuda/attention/attention_common.cuh"
#include "cuda/attention/attention_merge.cuh"
#include "cuda/attention/decode_work.cuh"
#include "cuda/attention/tile_softmax.cuh"

namespace strata::cuda {

template <class T, int WARPS_, int QCH_, int VCH_, int U_, class S = T>
struct DecodeConfig {
  using type = T;
  using storage = S;
  static constexpr int WARPS = WARPS_, QCH = QCH_, VCH = VCH_, U = U_;
  static constexpr int NT = WARPS * 32, VEC = Vec<T>::n;
  static constexpr int QE = QCH * VEC, VE = VCH * VEC;
  static constexpr int max_d = 32 * QE, max_dv = 32 * VE;
  static constexpr std::size_t smem_bytes = std::size_t(WARPS) * (2 + 32 * VE) * sizeof(T);
};

// The first half-storage version (tuning A/B by STRATA_CUDA_VARIANT): k, v
// widened to T inside load_row, right behind each load.
template <class T, int WARPS_, int QCH_, int VCH_, int U_, class S>
struct DecodeConvertAtLoad : DecodeConfig<T, WARPS_, QCH_, VCH_, U_, S> {
  static constexpr bool convert_at_load = true;
};

// Whether config C keeps loaded k, v rows packed in S (half storage, not
// DecodeConvertAtLoad).
template <class C, class = void>
struct DecodePacked : std::bool_constant<!std::is_same_v<typename C::storage, typename C::type>> {};
template <class C>
struct DecodePacked<C, std::void_t<decltype(C::convert_at_load)>> : std::false_type {};

// Element of a head row held by (lane, chunk q, component c). Vector layouts
// give each lane VEC adjacent elements; scalar ones interleave lanes so that
// unit-stride rows still coalesce.
__device__ __forceinline__ std::int64_t lane_elem(bool vec, int lane, int q, int c, int VEC) {
  return vec ? std::int64_t(lane + 32 * q) * VEC + c : std::int64_t(q * VEC + c) * 32 + lane;
}

// Loads the lane's slice of one head row of S into r (in T); elements past
// n, or all of them when !ok, are 0.
template <class T, class S, int CH>
__device__ __forceinline__ void load_row(T (&r)[CH * Vec<T>::n], const S* g, std::int64_t es,
                                         std::int64_t n, bool vec, bool ok, int lane) {
  using V = typename Vec<T>::type;
  constexpr int VEC = Vec<T>::n;
#pragma unroll
  for (int q = 0; q < CH; ++q) {
    if (vec && !std::is_same_v<S, T>) {
      // Narrow storage: one VEC * sizeof(S)-byte load, widened in registers.
      const std::int64_t e0 = std::int64_t(lane + 32 * q) * VEC;
      using W = SVec<S, VEC>;
      if (ok && e0 < n) {
        const W w = *reinterpret_cast<const W*>(g + e0);
#pragma unroll
        for (int c = 0; c < VEC; ++c) r[q * VEC + c] = to_compute<T>(w.e[c]);
      } else {
#pragma unroll
        for (int c = 0; c < VEC; ++c) r[q * VEC + c] = T(0);
      }
    } else if (vec) {
      const std::int64_t e0 = std::int64_t(lane + 32 * q) * VEC;
      const T* gt = reinterpret_cast<const T*>(g);  // S == T here
      V w;
      if (ok && e0 < n) {
        w = *reinterpret_cast<const V*>(gt + e0);
      } else {
        T* wp = reinterpret_cast<T*>(&w);
#pragma unroll
        for (int c = 0; c < VEC; ++c) wp[c] = 0;
      }
#pragma unroll
      for (int c = 0; c < VEC; ++c) r[q * VEC + c] = vget<T>(w, c);
    } else {
#pragma unroll
      for (int c = 0; c < VEC; ++c) {
        const std::int64_t e = std::int64_t(q * VEC + c) * 32 + lane;
        r[q * VEC + c] = (ok && e < n) ? to_compute<T>(g[e * es]) : T(0);
      }
    }
  }
}

// Loads the lane's slice of one head row of 2-byte S into r, packed: word
// 2q + h holds elements (q, 2h) in its low and (q, 2h + 1) in its high half
// (the lane_elem order, as load_row widens them). Elements past n, or all of
// them when !ok, are 0. No register of r is read here: the loads of several
// rows stay in flight together until their first use.
template <class S, int CH>
__device__ __forceinline__ void load_row_packed(unsigned (&r)[CH * 2], const S* g, std::int64_t es,
                                                std::int64_t n, bool vec, bool ok, int lane) {
  static_assert(sizeof(S) == 2, "packed rows hold two 2-byte elements per register");
  constexpr int VEC = 4;
#pragma unroll
  for (int q = 0; q < CH; ++q) {
    if (vec) {
      const std::int64_t e0 = std::int64_t(lane + 32 * q) * VEC;
      uint2 w = make_uint2(0u, 0u);
      if (ok && e0 < n) w = *reinterpret_cast<const uint2*>(g + e0);
      r[2 * q] = w.x;
      r[2 * q + 1] = w.y;
    } else {
      const unsigned short* gs = reinterpret_cast<const unsigned short*>(g);
      unsigned h[VEC];
#pragma unroll
      for (int c = 0; c < VEC; ++c) {
        const std::int64_t e = std::int64_t(q * VEC + c) * 32 + lane;
        h[c] = (ok && e < n) ? unsigned(gs[e * es]) : 0u;
      }
      r[2 * q] = h[0] | (h[1] << 16);
      r[2 * q + 1] = h[2] | (h[3] << 16);
    }
  }
}

// The two elements of a packed word, widened to float (exact).
template <class S>
__device__ __forceinline__ float2 unpack2(unsigned w);
template <>
__device__ __forceinline__ float2 unpack2<__nv_bfloat16>(unsigned w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
template <>
__device__ __forceinline__ float2 unpack2<__half>(unsigned w) {
  __half2 h;
  static_assert(sizeof(h) == sizeof(w), "__half2 is 4 bytes");
  memcpy(&h, &w, sizeof(w));
  return __half22float2(h);
}

// The P V update of decode_softmax_step, acc += p_u * (key u's v row), for
// the two ways the key loops hold v rows: widened to T, or packed in pairs
// of 2-byte S (each pair widened where it is used). Functors, not lambdas:
// with lambdas the f32 kernels' code changed (the order of their registers).
template <class T, int U, int VE>
struct AddPVWide {
  const T (&vr)[U][VE];
  __device__ __forceinline__ void operator()(int u, T pu, T (&acc)[VE]) const {
#pragma unroll
    for (int e = 0; e < VE; ++e) acc[e] = fma(pu, vr[u][e], acc[e]);
  }
};
template <class S, int U, int VE>
struct AddPVPacked {
  const unsigned (&vw)[U][VE / 2];
  __device__ __forceinline__ void operator()(int u, float pu, float (&acc)[VE]) const {
#pragma unroll
    for (int w = 0; w < VE / 2; ++w) {
      const float2 f = unpack2<S>(vw[u][w]);
      acc[2 * w] = fma(pu, f.x, acc[2 * w]);
      acc[2 * w + 1] = fma(pu, f.y, acc[2 * w + 1]);
    }
  }
};

// This lane's partial scores sc[u] = its slice of q . k_u for U packed
// half key rows (kw[u]: QE / 2 pairs), widened pair by pair; the warp's
// sum is decode_softmax_step's. Both packed key loops (decode_keys_packed,
// decode_consume in attention_decode_bulk.cuh) score this way.
template <class S, int U, int QE>
__device__ __forceinline__ void packed_scores(const float (&q)[QE], const unsigned (&kw)[U][QE / 2],
                                              float (&sc)[U]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    float t = 0;
#pragma unroll
    for (int w = 0; w < QE / 2; ++w) {
      const float2 f = unpack2<S>(kw[u][w]);
      t = fma(q[2 * w], f.x, t);
      t = fma(q[2 * w + 1], f.y, t);
    }
    sc[u] = t;
  }
}

// One warp step of the online softmax over keys jb .. jb + U - 1, shared by
// both key loops: reduces the lanes' partial scores sc across the warp,
// drops the keys outside [.., j_end), the band or the mask (adding a float
// mask's bias), rescales (m_run, l_run, acc) to the new running max, and
// adds each key's weight p_u = 2^(sc_u - m) times its v row into acc by
// add_pv(u, p_u, acc) (AddPVWide or AddPVPacked). plain (no mask) comes
// from the caller, read once before its key loop: read here, once a step,
// it changed the code of the f32 kernels.
template <class T, class S, int U, int VE, class AddPV>
__device__ __forceinline__ void decode_softmax_step(const AttnParams& p, const void* mask_head,
                                                    bool plain, std::int64_t row, std::int64_t jb,
                                                    std::int64_t j_end, T (&sc)[U], T& m_run,
                                                    T& l_run, T (&acc)[VE], const AddPV& add_pv) {
#pragma unroll
  for (int sh = 16; sh > 0; sh >>= 1)
#pragma unroll
    for (int u = 0; u < U; ++u) sc[u] += __shfl_xor_sync(0xffffffffu, sc[u], sh);
  T tmax = neg_inf<T>();
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const std::int64_t j = jb + u;
    T bias = 0;
    const bool kept = j < j_end && (plain || key_kept<T, S>(p, mask_head, row, j, &bias));
    sc[u] = kept ? sc[u] + bias : neg_inf<T>();
    tmax = fmax_(tmax, sc[u]);
  }
  const T m_use = rescale_row(tmax, m_run, l_run, acc);
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const T pu = fexp2(sc[u] - m_use);
    l_run += pu;
    add_pv(u, pu, acc);
  }
}

// The key loop of attn_decode_kernel for packed half rows: warp `warp`
// takes keys jb .. jb + U - 1 of [j_begin, j_end) per step, every U rows of
// k and v loaded (packed) before the first is read, and updates its online
// softmax (m_run, l_run, acc). VEC_ALL: every operand takes the vector
// path (p.q_vec, k_vec, v_vec), known at compile time.
template <class C, bool VEC_ALL>
__device__ __forceinline__ void decode_keys_packed(
    const AttnParams& p, const typename C::storage* kg, const typename C::storage* vg,
    const void* mask_head, std::int64_t row, std::int64_t j_begin, std::int64_t j_end, int warp,
    int lane, const float (&q)[C::QE], float& m_run, float& l_run, float (&acc)[C::VE]) {
  using T = float;
  using S = typename C::storage;
  static_assert(std::is_same_v<typename C::type, float>, "packed rows: f32 arithmetic");
  constexpr int WARPS = C::WARPS, QCH = C::QCH, VCH = C::VCH, U = C::U;
  constexpr int QE = C::QE, VE = C::VE;
  const AttentionArgs& a = p.a;
  const bool plain = p.mask_kind == kMaskNone;
  const bool kvec = VEC_ALL || (p.k_vec && p.q_vec), vvec = VEC_ALL || p.v_vec;
  const std::int64_t ks = attn::row_stride(a.k), vs = attn::row_stride(a.v);
  const std::int64_t kcs = attn::col_stride(a.k), vcs = attn::col_stride(a.v);
  for (std::int64_t jb = j_begin + std::int64_t(warp) * U; jb < j_end;
       jb += std::int64_t(WARPS) * U) {
    unsigned kw[U][QE / 2], vw[U][VE / 2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t j = jb + u;
      const bool ok = j < j_end;
      load_row_packed<S, QCH>(kw[u], kg + (ok ? j : 0) * ks, kcs, a.d, kvec, ok, lane);
      load_row_packed<S, VCH>(vw[u], vg + (ok ? j : 0) * vs, vcs, a.dv, vvec, ok, lane);
    }
    T sc[U];
    packed_scores<S, U, QE>(q, kw, sc);
    const AddPVPacked<S, U, VE> add_pv{vw};
    decode_softmax_step<T, S, U, VE>(p, mask_head, plain, row, jb, j_end, sc, m_run, l_run, acc,
                                     add_pv);
  }
}

// The end of a decode block, in three parts that both decode kernels share
// (attn_decode_kernel, attn_decode_bulk_kernel): each warp that took keys
// stores its online-softmax state (m_run, l_run, acc) in sm, a [WARPS][2 +
// 32 * VE] array of T (decode_store_warp); after a barrier the block's NT
// threads combine the WARPS states and write the normalised row to out
// (one split: returns true) or this split's partial row and (m, l)
// (decode_write_block);
// with ticket counters, decode_last_split tells every thread whether this
// block finished its row's splits last and merges them.
template <class C>
__device__ __forceinline__ void decode_store_warp(typename C::type* sm, int warp, int lane,
                                                  typename C::type m_run, typename C::type l_run,
                                                  const typename C::type (&acc)[C::VE]) {
  constexpr int LDW = 2 + 32 * C::VE;
  typename C::type* mine = sm + warp * LDW;
  if (lane == 0) {
    mine[0] = m_run;
    mine[1] = l_run;
  }
#pragma unroll
  for (int e = 0; e < C::VE; ++e) mine[2 + lane * C::VE + e] = acc[e];
}

template <class C, int NT>
__device__ __forceinline__ bool decode_write_block(const AttnParams& p, const HeadOffsets& off,
                                                   std::int64_t row, std::int64_t split,
                                                   std::int64_t bh, const typename C::type* sm) {
  using T = typename C::type;
  using S = typename C::storage;
  constexpr int WARPS = C::WARPS, VE = C::VE, VEC = C::VEC;
  constexpr int LDW = 2 + 32 * VE;
  const AttentionArgs& a = p.a;
  T mx = neg_inf<T>();
#pragma unroll
  for (int w = 0; w < WARPS; ++w) mx = fmax_(mx, sm[w * LDW]);
  const T m_use = mx == neg_inf<T>() ? T(0) : mx;
  T wt[WARPS];
  T l = 0;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    wt[w] = fexp2(sm[w * LDW] - m_use);
    l += wt[w] * sm[w * LDW + 1];
  }
  const bool final_out = p.splits == 1;
  const bool vec_layout = p.v_vec;
  const T inv = final_out ? (l == T(0) ? T(0) : T(1) / l) : T(1);
  if constexpr (std::is_same_v<S, T>) {
    T* dst;
    std::int64_t cs;
    if (final_out) {
      dst = static_cast<T*>(a.out.data) + off.o + row * attn::row_stride(a.out);
      cs = attn::col_stride(a.out);
    } else {
      dst = static_cast<T*>(p.part_acc) + ((split * p.bh + bh) * a.M + row) * a.dv;
      cs = 1;
    }
    for (int x = threadIdx.x; x < 32 * VE; x += NT) {
      T s = 0;
#pragma unroll
      for (int w = 0; w < WARPS; ++w) s = fma(wt[w], sm[w * LDW + 2 + x], s);
      const int ln = x / VE, k = x % VE;
      const std::int64_t col = lane_elem(vec_layout, ln, k / VEC, k % VEC, VEC);
      if (col < a.dv) dst[col * cs] = s * inv;
    }
  } else {
    // Final: out in S, rounded once; else this split's partial row in T.
    S* const out_row = static_cast<S*>(a.out.data) + off.o + row * attn::row_stride(a.out);
    const std::int64_t cs = attn::col_stride(a.out);
    T* const part_row =
        final_out ? nullptr
                  : static_cast<T*>(p.part_acc) + ((split * p.bh + bh) * a.M + row) * a.dv;
    for (int x = threadIdx.x; x < 32 * VE; x += NT) {
      T s = 0;
#pragma unroll
      for (int w = 0; w < WARPS; ++w) s = fma(wt[w], sm[w * LDW + 2 + x], s);
      const int ln = x / VE, k = x % VE;
      const std::int64_t col = lane_elem(vec_layout, ln, k / VEC, k % VEC, VEC);
      if (col < a.dv) {
        if (final_out)
          out_row[col * cs] = to_storage<S>(s * inv);
        else
          part_row[col] = s;
      }
    }
  }
  if (threadIdx.x == 0) {
    if (final_out) {
      if (a.lse.data)
        static_cast<T*>(a.lse.data)[off.l + row * attn::row_stride(a.lse)] =
            l == T(0) ? neg_inf<T>() : (mx + flog2(l)) * static_cast<T>(0.6931471805599453);
    } else {
      const std::int64_t r = (split * p.bh + bh) * a.M + row;
      static_cast<T*>(p.part_ml)[2 * r] = mx;
      static_cast<T*>(p.part_ml)[2 * r + 1] = l;
    }
  }
  return final_out;
}

// The row's last split to finish merges them all: each thread's partial
// stores are made visible device-wide before thread 0 takes the block's
// ticket; the block with the last ticket sees every other block's
// partials (their fences came before their tickets), and puts the
// counter back to 0 for the next launch or graph replay (no other block
// of this launch touches it again). The closing barrier also orders the
// block's reads of sm before the merge reuses it.
__device__ __forceinline__ bool decode_last_split(const AttnParams& p, unsigned* merge_count,
                                                  std::int64_t rid) {
  __threadfence();
  __syncthreads();
  bool last = false;
  if (threadIdx.x == 0) {
    last = atomicAdd(merge_count + rid, 1u) == unsigned(p.splits - 1);
    if (last) {
      merge_count[rid] = 0;
      __threadfence();
    }
  }
  return __syncthreads_or(last);
}

// merge_count: one ticket counter per row group (bh x M), all 0 on entry
// and left 0; null when the splits are merged by a separate kernel.
template <class C>
__global__ void __launch_bounds__(C::NT)
    attn_decode_kernel(const AttnParams p, unsigned* merge_count) {
  using T = typename C::type;
  using S = typename C::storage;
  constexpr int WARPS = C::WARPS, QCH = C::QCH, VCH = C::VCH, U = C::U;
  constexpr int QE = C::QE, VE = C::VE;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  grid_dependency_wait();  // launched with PDL (pdl_launch.cuh)
  allow_dependents();
  T* sm = reinterpret_cast<T*>(smem_raw);  // [WARPS][2 + 32*VE]

  const AttentionArgs& a = p.a;
  const DecodeWork<S> w = decode_work<S>(p);
  const std::int64_t row = w.row, split = w.split, bh = w.bh;
  const HeadOffsets off = w.off;
  const S *kg = w.k, *vg = w.v;
  const void* mask_head = w.mask;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // q pre-scaled into base 2 once per row.
  T q[QE];
  load_row<T, S, QCH>(q, static_cast<const S*>(a.q.data) + off.q + row * attn::row_stride(a.q),
                      attn::col_stride(a.q), a.d, p.k_vec && p.q_vec, true, lane);
  const T sl2 = static_cast<T>(p.scale_log2);
#pragma unroll
  for (int e = 0; e < QE; ++e) q[e] *= sl2;

  const auto [j_begin, j_end] = decode_keys(p, row, split);
  [[maybe_unused]] const bool plain = p.mask_kind == kMaskNone;

  T m_run = neg_inf<T>(), l_run = 0, acc[VE];
#pragma unroll
  for (int e = 0; e < VE; ++e) acc[e] = 0;

  if constexpr (DecodePacked<C>::value) {
    // Vector layouts (the usual case) get a loop of their own: one basic
    // block of 2U loads per step, no layout branch between them.
    if (p.k_vec && p.q_vec && p.v_vec)
      decode_keys_packed<C, true>(p, kg, vg, mask_head, row, j_begin, j_end, warp, lane, q, m_run,
                                  l_run, acc);
    else
      decode_keys_packed<C, false>(p, kg, vg, mask_head, row, j_begin, j_end, warp, lane, q, m_run,
                                   l_run, acc);
  } else {
    for (std::int64_t jb = j_begin + std::int64_t(warp) * U; jb < j_end;
         jb += std::int64_t(WARPS) * U) {
      T kr[U][QE], vr[U][VE];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const std::int64_t j = jb + u;
        const bool ok = j < j_end;
        load_row<T, S, QCH>(kr[u], kg + (ok ? j : 0) * attn::row_stride(a.k), attn::col_stride(a.k),
                            a.d, p.k_vec && p.q_vec, ok, lane);
        load_row<T, S, VCH>(vr[u], vg + (ok ? j : 0) * attn::row_stride(a.v), attn::col_stride(a.v),
                            a.dv, p.v_vec, ok, lane);
      }
      T sc[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        T t = 0;
#pragma unroll
        for (int e = 0; e < QE; ++e) t = fma(q[e], kr[u][e], t);
        sc[u] = t;
      }
      const AddPVWide<T, U, VE> add_pv{vr};
      decode_softmax_step<T, S, U, VE>(p, mask_head, plain, row, jb, j_end, sc, m_run, l_run, acc,
                                       add_pv);
    }
  }

  decode_store_warp<C>(sm, warp, lane, m_run, l_run, acc);
  __syncthreads();
  const bool final_out = decode_write_block<C, C::NT>(p, off, row, split, bh, sm);
  if (final_out || merge_count == nullptr) return;
  const std::int64_t rid = bh * a.M + row;
  if (!decode_last_split(p, merge_count, rid)) return;
  static_assert(merge_smem_elems<C::NT, VE>() <= WARPS * (2 + 32 * VE), "merge fits in sm");
  merge_splits<T, S, C::NT, VE>(p, rid, 0, sm);
}

}  // namespace strata::cuda
