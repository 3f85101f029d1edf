#pragma once
// The bulk-copy decode kernel with less fixed cost per call (tuning
// candidates, docs/cuda-tuning.md "Decode fixed cost: work stealing,
// prologue before the PDL wait, one-pass merge").
//
// attn_decode_bulk_kernel (attention_decode_bulk.cuh) streams one head of N
// 262144 at ~4.4 TB/s but spends ~10 us of its 40 per call outside the
// stream. Three parts of that are addressed here:
// - Split tails. Each split gets an equal share of keys up front, so the
//   call ends when the SM with the least bandwidth finishes; once a few
//   blocks are done the rest cannot go faster than their consumers
//   (~35 GB/s per SM). With STEAL, a row's splits are workers that take
//   slots of KS keys from a per-row counter (atomicAdd): each worker starts
//   with STAGES slots of its own (w, W + w, ...: the ring fills without
//   waiting for an atomic), then asks the counter for one slot ahead of
//   the one it copies, so the answer arrives while the producer waits for
//   a free slot. Workers then finish within about one slot of each other.
// - The prologue (blockIdx decode, head offsets, mbarrier set-up) runs
//   before griddepcontrol.wait: under PDL it overlaps the previous call's
//   tail instead of following it. Nothing before the wait reads or writes
//   global memory.
// - The row's last block merges the partials in one pass over L2
//   (merge_splits_onepass: each warp keeps a running max over its splits
//   and the warps meet with a rescale) instead of two (max, then sums).
//
// The producer tells the consumers what each slot holds through a header
// beside the mbarriers (first key, key count; count 0 ends the stream),
// written before its arrive on the slot's `full` barrier (release) and
// read after the consumers' wait on it (acquire). Without ticket counters
// (a capture on a stream that has none yet), for one split, for layouts the
// copies cannot take and for rows with no key in the band, the kernel takes
// the static split of attn_decode_bulk_kernel.
//
// Counters: merge_count[0, rows) are the row tickets of decode_last_split,
// merge_count[rows, 2 rows) the rows' slot counters (rows = bh x M); the
// launcher asks merge_counters for 2 rows of them. Both are 0 on entry and
// the row's last block puts both back to 0: every worker's last atomicAdd
// comes before its block's ticket (program order, the block barrier and
// the fence of decode_last_split), so no increment can follow the reset.
#include <cstdint>

#include "cuda/attention/attention_decode_bulk.cuh"

namespace strata::cuda {

// DecodeBulkConfig B with the slot headers, and STEAL: take slots from the
// row's counter (else the static split with the other two changes).
template <class B, bool STEAL_>
struct DecodeWsConfig : B {
  static constexpr bool STEAL = STEAL_;
  static constexpr std::size_t hdr_at = 2 * B::STAGES * sizeof(std::uint64_t);
  static_assert(hdr_at + B::STAGES * (sizeof(std::int64_t) + sizeof(int)) <= B::bar_bytes,
                "mbarriers and slot headers fit before the ring");
};

// One consumer warp's share of one filled slot: keys jb .. jb + U - 1 (jb
// = the slot's first key + warp * U), their K rows from kst (d elements
// apart) and V rows from vst (dv apart) in the slot, as decode_keys_packed
// takes them from global memory; keys past j_end read 0. The caller skips
// it when jb >= j_end. The body of decode_consume's step (kept apart so that
// the default kernel's code stays as measured).
template <class C>
__device__ __forceinline__ void decode_consume_slot(
    const AttnParams& p, const void* mask_head, bool plain, std::int64_t row, std::int64_t jb,
    std::int64_t j_end, const typename C::storage* kst, const typename C::storage* vst,
    std::int64_t d, std::int64_t dv, int lane, const float (&q)[C::QE], float& m_run, float& l_run,
    float (&acc)[C::VE]) {
  using T = float;
  using S = typename C::storage;
  constexpr int U = C::U, QCH = C::QCH, VCH = C::VCH;
  constexpr int QE = C::QE, VE = C::VE;
  unsigned kw[U][QE / 2], vw[U][VE / 2];
  if (jb + U <= j_end && d == C::max_d && dv == C::max_dv) {
    // The usual step: U whole rows, no bounds to test per load.
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int c = 0; c < QCH; ++c) {
        const uint2 w = *reinterpret_cast<const uint2*>(kst + u * C::max_d + (lane + 32 * c) * 4);
        kw[u][2 * c] = w.x;
        kw[u][2 * c + 1] = w.y;
      }
#pragma unroll
      for (int c = 0; c < VCH; ++c) {
        const uint2 w = *reinterpret_cast<const uint2*>(vst + u * C::max_dv + (lane + 32 * c) * 4);
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
#pragma unroll
  for (int u = 0; u < U; ++u) {
    T t = 0;
#pragma unroll
    for (int w = 0; w < QE / 2; ++w) {
      const float2 f = unpack2<S>(kw[u][w]);
      t = fma(q[2 * w], f.x, t);
      t = fma(q[2 * w + 1], f.y, t);
    }
    sc[u] = t;
  }
  const AddPVPacked<S, U, VE> add_pv{vw};
  if constexpr (C::XR)
    decode_softmax_step_xr<S, VE>(p, mask_head, plain, row, jb, j_end, sc, m_run, l_run, acc,
                                  add_pv, lane);
  else
    decode_softmax_step<T, S, U, VE>(p, mask_head, plain, row, jb, j_end, sc, m_run, l_run, acc,
                                     add_pv);
}

// The producer warp: copies chunks of KS keys of [lo, hi) into the ring,
// one per slot, each with its header, then a header of 0 keys. STEAL: chunk
// k of this worker is k * workers + worker for k < STAGES, then STAGES *
// workers + the row counter's next value; else chunk k is k. Chunk c holds
// keys lo + c * KS .. min(hi, lo + (c + 1) * KS) - 1.
template <class C>
__device__ __forceinline__ void decode_produce_stream(
    const typename C::storage* kg, const typename C::storage* vg, std::int64_t ks, std::int64_t vs,
    std::int64_t d, std::int64_t dv, std::int64_t lo, std::int64_t hi, bool steal,
    std::int64_t worker, std::int64_t workers, unsigned* counter, typename C::storage* ring,
    std::uint64_t* full, std::uint64_t* empty, std::int64_t* hdr_j0, int* hdr_n, int lane) {
  using S = typename C::storage;
  constexpr int KS = C::KS, STAGES = C::STAGES;
  const bool kcont = ks == d, vcont = vs == dv;
  const unsigned krow = unsigned(d * sizeof(S)), vrow = unsigned(dv * sizeof(S));
  const std::int64_t chunks = (hi - lo + KS - 1) / KS;
  std::int64_t c = steal ? worker : 0;
  int st = 0;
  for (; c < chunks; ++st) {
    const int slot = st % STAGES;
    // The next chunk is asked for before this one's wait and copies (its
    // answer is first read at the end of this step).
    unsigned grabbed = 0;
    if (steal && st + 1 >= STAGES && lane == 0) grabbed = atomicAdd(counter, 1u);
    if (st >= STAGES) mbar_wait(empty + slot, unsigned(st / STAGES - 1) & 1u);
    const std::int64_t j0 = lo + c * KS;
    const int n = int(min(std::int64_t(KS), hi - j0));
    S* const kdst = ring + slot * C::slot_elems;
    S* const vdst = kdst + KS * C::max_d;
    if (lane == 0) {
      hdr_j0[slot] = j0;
      hdr_n[slot] = n;
      mbar_arrive_expect_tx(full + slot, unsigned(n) * (krow + vrow));
    }
    __syncwarp();
    if (kcont) {
      if (lane == 0) bulk_copy_g2s(kdst, kg + j0 * ks, unsigned(n) * krow, full + slot);
    } else {
      for (int r = lane; r < n; r += 32)
        bulk_copy_g2s(kdst + r * d, kg + (j0 + r) * ks, krow, full + slot);
    }
    if (vcont) {
      if (lane == 0) bulk_copy_g2s(vdst, vg + j0 * vs, unsigned(n) * vrow, full + slot);
    } else {
      for (int r = lane; r < n; r += 32)
        bulk_copy_g2s(vdst + r * dv, vg + (j0 + r) * vs, vrow, full + slot);
    }
    if (!steal)
      c = st + 1;
    else if (st + 1 < STAGES)
      c = std::int64_t(st + 1) * workers + worker;
    else
      c = std::int64_t(STAGES) * workers + __shfl_sync(0xffffffffu, grabbed, 0);
  }
  // The end of the stream: a slot of 0 keys, no bytes to wait for.
  const int slot = st % STAGES;
  if (st >= STAGES) mbar_wait(empty + slot, unsigned(st / STAGES - 1) & 1u);
  if (lane == 0) {
    hdr_n[slot] = 0;
    mbar_arrive(full + slot);
  }
}

// A consumer warp: slot after slot, its U keys of the keys the header
// names (decode_consume_slot), until a header of 0 keys.
template <class C>
__device__ __forceinline__ void decode_consume_stream(
    const AttnParams& p, const void* mask_head, std::int64_t row, const typename C::storage* ring,
    std::uint64_t* full, std::uint64_t* empty, const std::int64_t* hdr_j0, const int* hdr_n,
    int warp, int lane, const float (&q)[C::QE], float& m_run, float& l_run, float (&acc)[C::VE]) {
  using S = typename C::storage;
  constexpr int KS = C::KS, STAGES = C::STAGES, U = C::U;
  const bool plain = p.mask_kind == kMaskNone;
  const std::int64_t d = p.a.d, dv = p.a.dv;
  for (int st = 0;; ++st) {
    const int slot = st % STAGES;
    mbar_wait(full + slot, unsigned(st / STAGES) & 1u);
    const int n = hdr_n[slot];
    if (n == 0) break;
    const std::int64_t j0 = hdr_j0[slot];
    const std::int64_t jb = j0 + warp * U, j_end = j0 + n;
    if (jb < j_end) {
      const S* const kst = ring + slot * C::slot_elems + warp * U * d;
      const S* const vst = ring + slot * C::slot_elems + KS * C::max_d + warp * U * dv;
      decode_consume_slot<C>(p, mask_head, plain, row, jb, j_end, kst, vst, d, dv, lane, q, m_run,
                             l_run, acc);
    }
    __syncwarp();  // every lane's reads of the slot and its header come first
    if (lane == 0) mbar_arrive(empty + slot);
  }
}

// merge_splits_wide in one pass over the partials: each warp loads R
// splits' (m, l, acc) at a time and folds them into its own running (max,
// l, sums), rescaling what it has when the max grows; the W warps' results
// meet in red, scaled to the block's max. One L2 round trip per R x W
// splits instead of merge_splits_wide's max pass plus that. Sums in
// another order than merge_splits_wide's (rounding only).
// red: W * (32 * CH + 2) elements of T.
template <class T, class S, int NT, int CH>
__device__ __forceinline__ void merge_splits_onepass(const AttnParams& p, std::int64_t rid,
                                                     T* red) {
  constexpr int W = NT / 32, LD = 32 * CH + 2, R = 16;
  const AttentionArgs& a = p.a;
  const std::int64_t sstride = p.bh * a.M;  // partial rows per split
  const T* ml = static_cast<const T*>(p.part_ml);
  const T* acc = static_cast<const T*>(p.part_acc);
  const int nsplit = static_cast<int>(p.splits);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  T m_w = neg_inf<T>(), l = 0, sum[CH];
#pragma unroll
  for (int k = 0; k < CH; ++k) sum[k] = 0;
  for (int s0 = warp; s0 < nsplit; s0 += R * W) {
    T mv[R], lv[R], av[R][CH];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int s = s0 + i * W;
      const bool ok = s < nsplit;
      const std::int64_t r = std::int64_t(ok ? s : 0) * sstride + rid;
      mv[i] = ok ? __ldcg(ml + 2 * r) : neg_inf<T>();
      lv[i] = ok ? __ldcg(ml + 2 * r + 1) : T(0);
#pragma unroll
      for (int k = 0; k < CH; ++k) {
        const std::int64_t c = 32 * k + lane;
        av[i][k] = ok && c < a.dv ? __ldcg(acc + r * a.dv + c) : T(0);
      }
    }
    T mb = m_w;
#pragma unroll
    for (int i = 0; i < R; ++i) mb = fmax_(mb, mv[i]);
    const T mb_use = mb == neg_inf<T>() ? T(0) : mb;
    const T rescale = fexp2(m_w - mb_use);  // 0 while m_w is -inf (l, sum are 0 then)
    l *= rescale;
#pragma unroll
    for (int k = 0; k < CH; ++k) sum[k] *= rescale;
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const T w = fexp2(mv[i] - mb_use);
      l = fma(w, lv[i], l);
#pragma unroll
      for (int k = 0; k < CH; ++k) sum[k] = fma(w, av[i][k], sum[k]);
    }
    m_w = mb;
  }
#pragma unroll
  for (int k = 0; k < CH; ++k) red[warp * LD + 32 * k + lane] = sum[k];
  if (lane == 0) {
    red[warp * LD + 32 * CH] = m_w;
    red[warp * LD + 32 * CH + 1] = l;
  }
  __syncthreads();
  T mx = neg_inf<T>();
#pragma unroll
  for (int w = 0; w < W; ++w) mx = fmax_(mx, red[w * LD + 32 * CH]);
  const T m_use = mx == neg_inf<T>() ? T(0) : mx;
  T scale[W];
  l = 0;
#pragma unroll
  for (int w = 0; w < W; ++w) {
    scale[w] = fexp2(red[w * LD + 32 * CH] - m_use);
    l = fma(scale[w], red[w * LD + 32 * CH + 1], l);
  }
  const T inv = l == T(0) ? T(0) : T(1) / l;

  const std::int64_t bh = rid / a.M, row = rid % a.M;
  const HeadOffsets off = head_offsets(p, bh);
  S* out = static_cast<S*>(a.out.data) + off.o + row * attn::row_stride(a.out);
  for (int x = threadIdx.x; x < 32 * CH && x < a.dv; x += NT) {
    T t = 0;
#pragma unroll
    for (int w = 0; w < W; ++w) t = fma(scale[w], red[w * LD + x], t);
    out[x * attn::col_stride(a.out)] = to_storage<S>(t * inv);
  }
  if (threadIdx.x == 0 && a.lse.data)
    static_cast<T*>(a.lse.data)[off.l + row * attn::row_stride(a.lse)] =
        l == T(0) ? neg_inf<T>() : (mx + flog2(l)) * static_cast<T>(0.6931471805599453);
}

// One block per (batch-head, query row, split) as attn_decode_bulk_kernel;
// merge_count as in the header comment (null: static splits, merged by the
// separate merge kernel).
template <class C>
__global__ void __launch_bounds__(C::NT, 1)
    attn_decode_ws_kernel(const AttnParams p, unsigned* merge_count) {
  using T = typename C::type;
  using S = typename C::storage;
  static_assert(std::is_same_v<T, float> && sizeof(S) == 2, "half storage, f32 arithmetic");
  constexpr int WARPS = C::WARPS, QCH = C::QCH, QE = C::QE, VE = C::VE, NT = C::NT;
  constexpr std::size_t ring_bytes = C::STAGES * C::slot_elems * sizeof(S);
  static_assert(WARPS * (2 + 32 * VE) * sizeof(T) <= ring_bytes, "the block's end fits");
  static_assert((NT / 32) * (32 * VE + 2) * sizeof(T) <= ring_bytes, "the merge fits");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  allow_dependents();
  std::uint64_t* const full = reinterpret_cast<std::uint64_t*>(smem_raw);
  std::uint64_t* const empty = full + C::STAGES;
  std::int64_t* const hdr_j0 = reinterpret_cast<std::int64_t*>(smem_raw + C::hdr_at);
  int* const hdr_n = reinterpret_cast<int*>(hdr_j0 + C::STAGES);
  S* const ring = reinterpret_cast<S*>(smem_raw + C::bar_bytes);
  T* const sm = reinterpret_cast<T*>(smem_raw + C::bar_bytes);  // after the key loop

  // The prologue: registers and shared memory only, before the PDL wait.
  const AttentionArgs& a = p.a;
  std::int64_t bid = blockIdx.x;
  const std::int64_t row = bid % a.M;
  bid /= a.M;
  const std::int64_t split = bid % p.splits;
  const std::int64_t bh = bid / p.splits;
  const std::int64_t rid = bh * a.M + row, rows = p.bh * a.M;
  const HeadOffsets off = head_offsets(p, bh);
  const S* kg = static_cast<const S*>(a.k.data) + off.k;
  const S* vg = static_cast<const S*>(a.v.data) + off.v;
  const void* mask_head = nullptr;
  if (p.mask_kind == kMaskBool) mask_head = static_cast<const unsigned char*>(a.mask.data) + off.mk;
  if (p.mask_kind == kMaskFloat) mask_head = static_cast<const S*>(a.mask.data) + off.mk;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // The row's keys (the band), and this split's static share of them.
  const std::int64_t row_lo = max(std::int64_t(0), row + a.band_lo);
  const std::int64_t row_hi = min(a.N, row + a.band_hi + 1);
  const std::int64_t j_begin = max(split * p.keys_per_split, row_lo);
  const std::int64_t j_end = min(min(a.N, split * p.keys_per_split + p.keys_per_split), row_hi);

  const bool vec_all = p.k_vec && p.q_vec && p.v_vec;
  const std::int64_t ks = attn::row_stride(a.k), vs = attn::row_stride(a.v);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // (Copies of 0 bytes are not allowed: d, dv > 0.)
  const bool copyable = vec_all && a.d > 0 && a.dv > 0 && a.d % 8 == 0 && a.dv % 8 == 0 &&
                        ks % 8 == 0 && vs % 8 == 0 && aligned16(kg) && aligned16(vg);
#else
  const bool copyable = false;
#endif
  // The same in every block of the row: the row's blocks agree on the
  // split of its keys.
  const bool steal =
      C::STEAL && copyable && merge_count != nullptr && p.splits > 1 && row_lo < row_hi;
  const bool bulk = steal || (copyable && j_begin < j_end);
  if (bulk && threadIdx.x == 0) {
    for (int s = 0; s < C::STAGES; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, WARPS);
    }
    mbar_fence_init();
  }
  __syncthreads();
  grid_dependency_wait();  // launched with PDL (pdl_launch.cuh): memory from here on

  T m_run = neg_inf<T>(), l_run = 0, acc[VE];
#pragma unroll
  for (int e = 0; e < VE; ++e) acc[e] = 0;
  T q[QE];
  // q pre-scaled into base 2 once per row, by the consumer warps only.
  const auto load_q = [&] {
    load_row<T, S, QCH>(q, static_cast<const S*>(a.q.data) + off.q + row * attn::row_stride(a.q),
                        attn::col_stride(a.q), a.d, p.k_vec && p.q_vec, true, lane);
    const T sl2 = static_cast<T>(p.scale_log2);
#pragma unroll
    for (int e = 0; e < QE; ++e) q[e] *= sl2;
  };

  if (bulk) {
    if (warp == WARPS) {
      decode_produce_stream<C>(kg, vg, ks, vs, a.d, a.dv, steal ? row_lo : j_begin,
                               steal ? row_hi : j_end, steal, split, p.splits,
                               merge_count + rows + rid, ring, full, empty, hdr_j0, hdr_n, lane);
    } else {
      load_q();
      decode_consume_stream<C>(p, mask_head, row, ring, full, empty, hdr_j0, hdr_n, warp, lane, q,
                               m_run, l_run, acc);
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
  const bool final_out = decode_write_block<C, NT>(p, off, row, split, bh, sm);
  if (final_out || merge_count == nullptr) return;
  if (!decode_last_split(p, merge_count, rid)) return;
  if (steal && threadIdx.x == 0) merge_count[rows + rid] = 0;  // for the next launch or replay
  merge_splits_onepass<T, S, NT, VE>(p, rid, sm);
}

}  // namespace strata::cuda
