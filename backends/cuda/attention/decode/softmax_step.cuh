#pragma once
// One warp step of the decode kernels' online softmax over U keys
// (decode_softmax_step), its P V update for widened or packed v rows
// (AddPVWide, AddPVPacked), the partial scores of packed key rows
// (packed_scores), and the key loop over packed rows from global memory
// (decode_keys_packed) that both decode kernels run.
#include <cstdint>
#include <type_traits>

#include "cuda/attention/common/row_softmax.cuh"
#include "cuda/attention/common/streaming_params.cuh"
#include "cuda/attention/decode/row_loads.cuh"

namespace strata::cuda {

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
// decode_consume in decode/bulk_kernel.cuh) score this way.
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

}  // namespace strata::cuda
