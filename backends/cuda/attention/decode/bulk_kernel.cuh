#pragma once
// The half-storage decode kernel fed by the copy engine (sm_90 bulk copies;
// docs/guide/cuda-decode.md, docs/log/cuda-tuning.md "Decode with bulk
// copies: measured and promoted").
//
// attn_decode_kernel (decode/kernel.cuh) keeps a warp's loads in flight
// only while the warp waits for them: each warp step issues its 2U row
// loads, stalls until they land, then computes, and the SM has no loads of
// that warp outstanding while it computes. bf16.decode.d128 (4 blocks of 4
// warps per SM, 4 KB per warp step) has at most 64 KB per SM in flight, and
// on average far less: too little to cover the loaded latency at the copy
// bandwidth. Here one producer warp copies the split's keys with
// cp.async.bulk into a ring of STAGES shared-memory slots of KS = WARPS * U
// keys (K rows, then V rows), each slot completing on an mbarrier (`full`);
// WARPS consumer warps wait for a slot, take U keys each from shared memory
// with the same packed rows, dot products and online softmax as
// attn_decode_kernel (decode_softmax_step), and release it (`empty`, WARPS
// arrivals) for the producer to refill. The bytes in flight per block are
// the ring, whatever the consumers are doing, and the copies are a few
// instructions per slot.
//
// Copies need 16-byte aligned rows of a multiple of 16 bytes: the vector
// layout (q, k, v), d and dv multiples of 8, K and V row strides multiples
// of 8 elements and head bases 16-byte aligned. Rows stored back to back
// (row stride d, dv) go as one copy per slot and tensor, other row strides
// (padded rows, interleaved heads, negative strides) as one copy per row.
// Any other layout, N = 0 and builds below sm_90 take the register path of
// attn_decode_kernel (decode_keys_packed) in the consumer warps. Masks,
// bands, GQA, lse and the split-KV ticket merge are those of
// attn_decode_kernel; the row's last split merges with merge_splits_wide,
// which keeps many splits' loads in flight, so the plan may make any
// number of splits (Variant::merges_any_splits).
#include <cstdint>
#include <type_traits>

#include "cuda/attention/common/split_merge.cuh"
#include "cuda/attention/common/streaming_params.cuh"
#include "cuda/attention/decode/block.cuh"
#include "cuda/attention/decode/bulk_copy.cuh"
#include "cuda/attention/decode/row_loads.cuh"
#include "cuda/attention/decode/softmax_step.cuh"

namespace strata::cuda {

// WARPS consumer warps taking U keys each per slot, STAGES slots, one
// producer warp; T = float, S the 2-byte storage type. XR (U = 8 only): the
// consumers reduce their 8 scores by a transposed butterfly
// (decode_softmax_step_xr) instead of 8 separate ones.
template <class T, int WARPS_, int QCH_, int VCH_, int U_, int STAGES_, class S, bool XR_ = false>
struct DecodeBulkConfig {
  using type = T;
  using storage = S;
  static constexpr int WARPS = WARPS_, QCH = QCH_, VCH = VCH_, U = U_, STAGES = STAGES_;
  static constexpr bool XR = XR_;
  static_assert(!XR || U == 8, "the transposed reduction takes 8 keys");
  static constexpr int VEC = Vec<T>::n, QE = QCH * VEC, VE = VCH * VEC;
  static constexpr int max_d = 32 * QE, max_dv = 32 * VE;
  static constexpr int KS = WARPS * U;         // keys per slot
  static constexpr int NT = (WARPS + 1) * 32;  // + the producer warp
  // mbarriers (full[STAGES], empty[STAGES]) first, then the ring.
  static constexpr std::size_t bar_bytes = 128;
  static constexpr std::size_t slot_elems = std::size_t(KS) * (max_d + max_dv);
  static constexpr std::size_t smem_bytes = bar_bytes + STAGES * slot_elems * sizeof(S);
  static_assert(2 * STAGES * sizeof(std::uint64_t) <= bar_bytes, "mbarriers fit");
  static_assert(slot_elems * sizeof(S) % 16 == 0, "slots keep 16-byte alignment");
};

// decode_softmax_step for 8 keys, with fewer shuffles: the lanes' partial
// scores are reduced by a transposed butterfly (at xor 16 each lane sends
// half of its 8 sums and keeps the other half, at xor 8 a quarter, at xor 4
// one; xor 2 and 1 finish), 9 shuffles instead of 40, after which lane L
// holds the whole score of key (L >> 2) & 7. Each lane then tests one key
// against the band and mask (decode_softmax_step: all 8) and takes one
// exp2 (there: 8); the maximum and the sum of the 8 weights take 3
// shuffles each and the P V update fetches the 8 weights by 8 more (23
// shuffles in all). Same results but for the order of the score sums.
template <class S, int VE, class AddPV>
__device__ __forceinline__ void decode_softmax_step_xr(const AttnParams& p, const void* mask_head,
                                                       bool plain, std::int64_t row,
                                                       std::int64_t jb, std::int64_t j_end,
                                                       const float (&sc)[8], float& m_run,
                                                       float& l_run, float (&acc)[VE],
                                                       const AddPV& add_pv, int lane) {
  constexpr unsigned all = 0xffffffffu;
  const bool b16 = lane & 16, b8 = lane & 8, b4 = lane & 4;
  float t1[4], t2[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float give = b16 ? sc[i] : sc[i + 4];
    t1[i] = (b16 ? sc[i + 4] : sc[i]) + __shfl_xor_sync(all, give, 16);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float give = b8 ? t1[i] : t1[i + 2];
    t2[i] = (b8 ? t1[i + 2] : t1[i]) + __shfl_xor_sync(all, give, 8);
  }
  float s = (b4 ? t2[1] : t2[0]) + __shfl_xor_sync(all, b4 ? t2[0] : t2[1], 4);
  s += __shfl_xor_sync(all, s, 2);
  s += __shfl_xor_sync(all, s, 1);
  const std::int64_t j = jb + ((lane >> 2) & 7);
  float bias = 0;
  const bool kept = j < j_end && (plain || key_kept<float, S>(p, mask_head, row, j, &bias));
  s = kept ? s + bias : neg_inf<float>();
  float tmax = s;
#pragma unroll
  for (int sh = 4; sh < 32; sh <<= 1) tmax = fmax_(tmax, __shfl_xor_sync(all, tmax, sh));
  const float m_new = fmax_(m_run, tmax);
  const float m_use = m_new == neg_inf<float>() ? 0.0f : m_new;
  const float alpha = fexp2(m_run - m_use);
  m_run = m_new;
  l_run *= alpha;
#pragma unroll
  for (int e = 0; e < VE; ++e) acc[e] *= alpha;
  const float pk = fexp2(s - m_use);
  float psum = pk;
#pragma unroll
  for (int sh = 4; sh < 32; sh <<= 1) psum += __shfl_xor_sync(all, psum, sh);
  l_run += psum;
#pragma unroll
  for (int u = 0; u < 8; ++u) add_pv(u, __shfl_sync(all, pk, u << 2), acc);
}

// A consumer warp: per slot, keys jb .. jb + U - 1 (jb = the slot's first
// key + warp * U) from shared memory (rows d and dv elements apart), as
// decode_keys_packed takes them from global memory; keys past j_end read 0.
template <class C>
__device__ __forceinline__ void decode_consume(const AttnParams& p, const void* mask_head,
                                               std::int64_t row, std::int64_t j_begin,
                                               std::int64_t j_end, const typename C::storage* ring,
                                               std::uint64_t* full, std::uint64_t* empty, int warp,
                                               int lane, const float (&q)[C::QE], float& m_run,
                                               float& l_run, float (&acc)[C::VE]) {
  using T = float;
  using S = typename C::storage;
  constexpr int KS = C::KS, STAGES = C::STAGES, U = C::U, QCH = C::QCH, VCH = C::VCH;
  constexpr int QE = C::QE, VE = C::VE;
  const AttentionArgs& a = p.a;
  const bool plain = p.mask_kind == kMaskNone;
  const std::int64_t d = a.d, dv = a.dv;
  const int slots = int((j_end - j_begin + KS - 1) / KS);
  for (int st = 0; st < slots; ++st) {
    const int slot = st % STAGES;
    const std::int64_t jb = j_begin + std::int64_t(st) * KS + warp * U;
    mbar_wait(full + slot, unsigned(st / STAGES) & 1u);
    if (jb < j_end) {
      const S* const kst = ring + slot * C::slot_elems + warp * U * d;
      const S* const vst = ring + slot * C::slot_elems + KS * C::max_d + warp * U * dv;
      unsigned kw[U][QE / 2], vw[U][VE / 2];
      if (jb + U <= j_end && d == C::max_d && dv == C::max_dv) {
        // The usual step: U whole rows, no bounds to test per load.
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
          for (int c = 0; c < QCH; ++c) {
            const uint2 w =
                *reinterpret_cast<const uint2*>(kst + u * C::max_d + (lane + 32 * c) * 4);
            kw[u][2 * c] = w.x;
            kw[u][2 * c + 1] = w.y;
          }
#pragma unroll
          for (int c = 0; c < VCH; ++c) {
            const uint2 w =
                *reinterpret_cast<const uint2*>(vst + u * C::max_dv + (lane + 32 * c) * 4);
            vw[u][2 * c] = w.x;
            vw[u][2 * c + 1] = w.y;
          }
        }
      } else {
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const bool ok = jb + u < j_end;
          load_row_packed<S, QCH>(kw[u], kst + u * d, 1, d, true, ok, lane);
          load_row_packed<S, VCH>(vw[u], vst + u * dv, 1, dv, true, ok, lane);
        }
      }
      T sc[U];
      packed_scores<S, U, QE>(q, kw, sc);
      const AddPVPacked<S, U, VE> add_pv{vw};
      if constexpr (C::XR)
        decode_softmax_step_xr<S, VE>(p, mask_head, plain, row, jb, j_end, sc, m_run, l_run, acc,
                                      add_pv, lane);
      else
        decode_softmax_step<T, S, U, VE>(p, mask_head, plain, row, jb, j_end, sc, m_run, l_run, acc,
                                         add_pv);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + slot);
  }
}

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

// One block per (batch-head, query row, key split), as attn_decode_kernel;
// merge_count as there. The minimum of one block per SM in the launch
// bounds keeps ptxas from capping the registers (without it ptxas took
// fewer and spilled; with it none spill, and one block of 9 warps or two of
// 5 fit an SM, sm_90a).
template <class C>
__global__ void __launch_bounds__(C::NT, 1)
    attn_decode_bulk_kernel(const AttnParams p, unsigned* merge_count) {
  using T = typename C::type;
  using S = typename C::storage;
  static_assert(std::is_same_v<T, float> && sizeof(S) == 2, "half storage, f32 arithmetic");
  constexpr int WARPS = C::WARPS, QCH = C::QCH, QE = C::QE, VE = C::VE;
  static_assert(WARPS * (2 + 32 * VE) * sizeof(T) <= C::STAGES * C::slot_elems * sizeof(S),
                "the block's end fits in the ring");
  static_assert(merge_smem_elems<C::NT, VE>() * sizeof(T) <= C::STAGES * C::slot_elems * sizeof(S),
                "the merge fits in the ring");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  grid_dependency_wait();  // launched with PDL (pdl_launch.cuh)
  allow_dependents();
  std::uint64_t* const full = reinterpret_cast<std::uint64_t*>(smem_raw);
  std::uint64_t* const empty = full + C::STAGES;
  S* const ring = reinterpret_cast<S*>(smem_raw + C::bar_bytes);
  T* const sm = reinterpret_cast<T*>(smem_raw + C::bar_bytes);  // after the key loop

  const AttentionArgs& a = p.a;
  const auto [row, split, bh, off, kg, vg, mask_head] = decode_work<S>(p);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // q pre-scaled into base 2 once per row, by the consumer warps only: the
  // producer issues its first copies without waiting for it.
  T q[QE];
  const auto load_q = [&] { load_q_log2<T, S, QCH>(q, p, off, row, lane); };

  const auto [j_begin, j_end] = decode_keys(p, row, split);

  T m_run = neg_inf<T>(), l_run = 0, acc[VE];
#pragma unroll
  for (int e = 0; e < VE; ++e) acc[e] = 0;

  const bool vec_all = p.k_vec && p.q_vec && p.v_vec;
  const std::int64_t ks = attn::row_stride(a.k), vs = attn::row_stride(a.v);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // (Copies of 0 bytes are not allowed: d, dv > 0.)
  const bool bulk = vec_all && j_begin < j_end && a.d > 0 && a.dv > 0 && a.d % 8 == 0 &&
                    a.dv % 8 == 0 && ks % 8 == 0 && vs % 8 == 0 && aligned16(kg) && aligned16(vg);
#else
  const bool bulk = false;
#endif
  if (bulk) {
    if (threadIdx.x == 0) {
      for (int s = 0; s < C::STAGES; ++s) {
        mbar_init(full + s, 1);
        mbar_init(empty + s, WARPS);
      }
      mbar_fence_init();
    }
    __syncthreads();
    if (warp == WARPS) {
      decode_produce<C>(kg, vg, ks, vs, a.d, a.dv, j_begin, j_end, ring, full, empty, lane);
    } else {
      load_q();
      decode_consume<C>(p, mask_head, row, j_begin, j_end, ring, full, empty, warp, lane, q, m_run,
                        l_run, acc);
    }
    __syncthreads();  // every slot is read before the block's end reuses the ring
  } else if (warp < WARPS) {
    load_q();
    if (vec_all)
      decode_keys_packed<C, true>(p, kg, vg, mask_head, row, j_begin, j_end, warp, lane, q, m_run,
                                  l_run, acc);
    else
      decode_keys_packed<C, false>(p, kg, vg, mask_head, row, j_begin, j_end, warp, lane, q, m_run,
                                   l_run, acc);
  }

  if (warp < WARPS) decode_store_warp<C>(sm, warp, lane, m_run, l_run, acc);
  __syncthreads();
  const bool final_out = decode_write_block<C, C::NT>(p, off, row, split, bh, sm);
  if (final_out || merge_count == nullptr) return;
  const std::int64_t rid = bh * a.M + row;
  if (!decode_last_split(p, merge_count, rid)) return;
  merge_splits_wide<T, S, C::NT, VE>(p, rid, sm);
}

}  // namespace strata::cuda
