#pragma once
// Decoding kernel for few query rows and many keys (memory bound): a block
// owns one query row and one split of the keys; each warp takes U keys at a
// time, every lane holding a slice of q, k and v in registers (16-byte loads
// when the layout allows), dot products reduced by xor shuffles, and an
// online softmax per warp. The warps of a block merge through shared memory.
// With several splits each block writes its partial (acc, m, l); given
// ticket counters, the block that finishes a row's splits last merges them
// in place (merge_splits, common/split_merge.cuh), else attn_merge_kernel runs
// after the kernel (dispatch/launch_streaming.cu, "merge_counters").
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
// f32 per step (the same bytes in flight).
#include <type_traits>

#include "cuda/attention/common/split_merge.cuh"
#include "cuda/attention/common/streaming_params.cuh"
#include "cuda/attention/decode/block.cuh"
#include "cuda/attention/decode/row_loads.cuh"
#include "cuda/attention/decode/softmax_step.cuh"

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
  const auto [row, split, bh, off, kg, vg, mask_head] = decode_work<S>(p);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // q pre-scaled into base 2 once per row.
  T q[QE];
  load_q_log2<T, S, QCH>(q, p, off, row, lane);

  const auto [j_begin, j_end] = decode_keys(p, row, split);
  [[maybe_unused]] const bool plain = p.mask_kind == kMaskNone;

  T m_run = neg_inf<T>(), l_run = 0, acc[VE];
#pragma unroll
  for (int e = 0; e < VE; ++e) acc[e] = 0;

  if constexpr (!std::is_same_v<S, T>) {  // half storage: rows kept packed
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
