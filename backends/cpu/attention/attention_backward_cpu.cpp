// The cpu backend's softmax_attention backward: FlashAttention-2's
// recomputation, on Eigen GEMMs over blocks of 64 queries x 64 keys. P is
// rebuilt from the forward's lse one block at a time and never held whole:
//   S = scale Q K^T (+ float mask)   P = exp(S - lse) on kept keys, else 0
//   dV += P^T dO   dP = dO V^T   dS = P (dP - D),  D = rowsum(dO o O) - dlse
//   dQ += scale dS K   dK += scale dS^T Q
// (rowsum(dO o O) equals rowsum(dP o P), FlashAttention-2's identity, so D
// costs one pass over dO instead of a second pass over the keys.)
//
// Threads: one task per (batch, kv head) owns its K, V, dK, dV and the dQ of
// the query heads that read it, so no two threads write one element and the
// sums run in one fixed order: the same bits run to run, no atomics. Extra
// memory: one workspace per thread, O((N + M) (d + dv) + 64 x 64).
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <vector>

#include "cpu/attention/attention_cpu.hpp"
#include "cpu/threads.hpp"
#include "cpu/workspace.hpp"

namespace strata::cpu {
namespace {

using i64 = std::int64_t;
constexpr i64 kBlock = 64;
constexpr const char* kOp = "softmax_attention_backward";

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using View = Eigen::Map<RowMat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

// rows x cols of a row-major buffer with leading dimension ld, from row r0.
template <class T>
View<T> block(T* p, i64 r0, i64 rows, i64 cols, i64 ld) {
  return View<T>(p + r0 * ld, rows, cols, Eigen::OuterStride<>(ld));
}

// Row-major copy of head (b, h) of x: rows x cols.
template <class T>
void pack(T* dst, const Operand& x, i64 b, i64 h, i64 rows, i64 cols) {
  const T* src = attn::head_ptr<const T>(x, b, h);
  const i64 rs = attn::row_stride(x), cs = attn::col_stride(x);
  for (i64 i = 0; i < rows; ++i)
    for (i64 c = 0; c < cols; ++c) dst[i * cols + c] = src[i * rs + c * cs];
}

template <class T>
void unpack(const Operand& x, i64 b, i64 h, const T* src, i64 rows, i64 cols) {
  T* dst = attn::head_ptr<T>(x, b, h);
  const i64 rs = attn::row_stride(x), cs = attn::col_stride(x);
  for (i64 i = 0; i < rows; ++i)
    for (i64 c = 0; c < cols; ++c) dst[i * rs + c * cs] = src[i * cols + c];
}

template <class T>
struct Workspace {
  T *K, *V, *dK, *dV, *Q, *dO, *dQ, *lse, *D, *P, *dP;
  static i64 elems(const AttentionArgs& a) {
    return a.N * (2 * a.d + 2 * a.dv) + a.M * (2 * a.d + a.dv) + 2 * a.M + 2 * kBlock * kBlock;
  }
  Workspace(T* w, const AttentionArgs& a) {
    for (auto [p, n] : {std::pair{&K, a.N * a.d},
                        {&V, a.N * a.dv},
                        {&dK, a.N * a.d},
                        {&dV, a.N * a.dv},
                        {&Q, a.M * a.d},
                        {&dO, a.M * a.dv},
                        {&dQ, a.M * a.d},
                        {&lse, a.M},
                        {&D, a.M},
                        {&P, kBlock * kBlock},
                        {&dP, kBlock * kBlock}}) {
      *p = w;
      w += n;
    }
  }
};

// P for queries [i0, i0 + ib) and keys [j0, j0 + jb) of head (b, h), from
// the scores S = Q K^T already in w.P: the forward's rules (band, bool or
// float mask, then exp(s - lse)); a masked key, or a row with no kept key
// (lse = -inf), gets 0.
template <class T>
void probabilities(const AttentionArgs& a, const Workspace<T>& w, i64 b, i64 h, i64 i0, i64 ib,
                   i64 j0, i64 jb) {
  const T scale = static_cast<T>(a.scale);
  const bool has_mask = a.mask.data != nullptr, mask_bool = a.mask.dtype == DType::boolean;
  const i64 mk0 = has_mask ? attn::head_offset(a.mask, b, h) : 0;
  const i64 mrs = attn::row_stride(a.mask), mcs = attn::col_stride(a.mask);
  for (i64 r = 0; r < ib; ++r) {
    const i64 i = i0 + r;
    const T l = w.lse[i];
    T* p = w.P + r * kBlock;
    for (i64 c = 0; c < jb; ++c) {
      const i64 j = j0 + c;
      T s = p[c] * scale;
      bool kept =
          j >= i + a.band_lo && j <= i + a.band_hi && l != -std::numeric_limits<T>::infinity();
      if (kept && has_mask) {
        const i64 off = mk0 + i * mrs + j * mcs;
        if (mask_bool)
          kept = static_cast<const std::uint8_t*>(a.mask.data)[off] != 0;
        else
          s += static_cast<const T*>(a.mask.data)[off];
      }
      p[c] = kept ? std::exp(s - l) : T(0);
    }
  }
}

// Everything one (batch b, kv head hk) task writes: dK, dV of the kv head
// and dQ of its query heads.
template <class T>
void one_group(const AttentionBackwardArgs& g, const Workspace<T>& w, i64 b, i64 hk) {
  const AttentionArgs& a = g.fwd;
  const i64 M = a.M, N = a.N, d = a.d, dv = a.dv, G = a.Hq / a.Hkv;
  const T scale = static_cast<T>(a.scale);
  pack(w.K, a.k, b, hk, N, d);
  pack(w.V, a.v, b, hk, N, dv);
  std::fill(w.dK, w.dK + N * d, T(0));
  std::fill(w.dV, w.dV + N * dv, T(0));
  for (i64 h = hk * G; h < (hk + 1) * G; ++h) {
    pack(w.Q, a.q, b, h, M, d);
    pack(w.dO, g.dout, b, h, M, dv);
    pack(w.lse, a.lse, b, h, M, 1);
    const T* o = attn::head_ptr<const T>(a.out, b, h);
    const T* dl = g.dlse.data ? attn::head_ptr<const T>(g.dlse, b, h) : nullptr;
    for (i64 i = 0; i < M; ++i) {
      T sum = 0;
      for (i64 c = 0; c < dv; ++c)
        sum += w.dO[i * dv + c] * o[i * attn::row_stride(a.out) + c * attn::col_stride(a.out)];
      w.D[i] = sum - (dl ? dl[i * attn::row_stride(g.dlse)] : T(0));
    }
    std::fill(w.dQ, w.dQ + M * d, T(0));
    for (i64 i0 = 0; i0 < M; i0 += kBlock) {
      const i64 ib = std::min(kBlock, M - i0);
      // Keys any row of the block may keep (the band's reach).
      const i64 jlo = std::max<i64>(0, a.band_lo <= -kNoLimit ? 0 : i0 + a.band_lo);
      const i64 jhi = std::min<i64>(N, a.band_hi >= kNoLimit ? N : i0 + ib + a.band_hi);
      for (i64 j0 = jlo; j0 < jhi; j0 += kBlock) {
        const i64 jb = std::min(kBlock, jhi - j0);
        auto P = block(w.P, 0, ib, jb, kBlock);
        auto dP = block(w.dP, 0, ib, jb, kBlock);
        const auto Qb = block(w.Q, i0, ib, d, d);
        const auto dOb = block(w.dO, i0, ib, dv, dv);
        const auto Kb = block(w.K, j0, jb, d, d);
        const auto Vb = block(w.V, j0, jb, dv, dv);
        P.noalias() = Qb * Kb.transpose();
        probabilities(a, w, b, h, i0, ib, j0, jb);
        block(w.dV, j0, jb, dv, dv).noalias() += P.transpose() * dOb;
        dP.noalias() = dOb * Vb.transpose();
        const Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>> Db(w.D + i0, ib);
        dP.array() = P.array() * (dP.array().colwise() - Db.array()) * scale;  // scale dS
        block(w.dQ, i0, ib, d, d).noalias() += dP * Kb;
        block(w.dK, j0, jb, d, d).noalias() += dP.transpose() * Qb;
      }
    }
    unpack(g.dq, b, h, w.dQ, M, d);
  }
  unpack(g.dk, b, hk, w.dK, N, d);
  unpack(g.dv, b, hk, w.dV, N, dv);
}

}  // namespace

template <class T>
void attention_backward_cpu(const AttentionBackwardArgs& g) {
  const AttentionArgs& a = g.fwd;
  const i64 tasks = a.batch_count() * a.Hkv;
  const int threads = region_team(tasks);
  std::vector<T> ws =
      workspace<T>({threads, Workspace<T>::elems(a)}, kOp, "per-thread backward workspaces");
  std::exception_ptr first;
#pragma omp parallel num_threads(threads)
  {
    const Workspace<T> w(ws.data() + omp_get_thread_num() * Workspace<T>::elems(a), a);
#pragma omp for schedule(dynamic, 1)
    for (i64 t = 0; t < tasks; ++t) {
      try {
        one_group<T>(g, w, t / a.Hkv, t % a.Hkv);
      } catch (...) {
#pragma omp critical(strata_attention_backward_error)
        if (!first) first = std::current_exception();
      }
    }
  }
  if (first) rethrow_after_region(first, kOp);
}

template void attention_backward_cpu<float>(const AttentionBackwardArgs&);
template void attention_backward_cpu<double>(const AttentionBackwardArgs&);

}  // namespace strata::cpu
