// Naive, obviously-correct softmax attention. Per (batch, head): gather Q, K,
// V into dense matrices of the accumulation type, S = scale * Q K^T, apply
// band and mask, row softmax with max subtraction, out = P V / rowsum.
// Speed is not a goal; being easy to check by eye is.
#include "reference/attention_reference.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <limits>

namespace strata::reference {
namespace {

template <class Acc>
using Mat = Eigen::Matrix<Acc, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// rows x cols matrix read from base + i * rs + j * cs (any strides).
template <class Acc, class T>
void gather(Mat<Acc>& dst, const T* base, std::int64_t rows, std::int64_t cols, std::int64_t rs,
            std::int64_t cs) {
  dst.resize(rows, cols);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) dst(i, j) = static_cast<Acc>(base[i * rs + j * cs]);
  }
}

}  // namespace

template <class T, class Acc>
void attention(const AttentionArgs& a) {
  constexpr Acc kInf = std::numeric_limits<Acc>::infinity();
  constexpr Acc kNaN = std::numeric_limits<Acc>::quiet_NaN();
  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  T* out = static_cast<T*>(a.out);
  T* lse = static_cast<T*>(a.lse);
  const std::int64_t group = a.Hq / a.Hkv;
  const Acc scale = static_cast<Acc>(a.scale);

  Mat<Acc> Q, K, V, S;
  Eigen::Matrix<Acc, 1, Eigen::Dynamic> acc(a.dv);
  for (std::int64_t b = 0; b < a.batch_count(); ++b) {
    for (std::int64_t h = 0; h < a.Hq; ++h) {
      const std::int64_t hk = h / group;
      gather(Q, q + batch_offset(a, b, a.q_bs) + h * a.q_hs, a.M, a.d, a.q_ms, a.q_ds);
      gather(K, k + batch_offset(a, b, a.k_bs) + hk * a.k_hs, a.N, a.d, a.k_ns, a.k_ds);
      gather(V, v + batch_offset(a, b, a.v_bs) + hk * a.v_hs, a.N, a.dv, a.v_ns, a.v_ds);
      S.noalias() = Q * K.transpose();
      S *= scale;

      T* orow0 = out + batch_offset(a, b, a.o_bs) + h * a.o_hs;
      const std::int64_t mk0 = a.mask ? batch_offset(a, b, a.mk_bs) + h * a.mk_hs : 0;
      for (std::int64_t i = 0; i < a.M; ++i) {
        // keep[j]: inside the band and not masked out; float masks add here.
        auto kept = [&](std::int64_t j, Acc& s) {
          if (j < i + a.band_lo || j > i + a.band_hi) return false;
          if (a.mask) {
            const std::int64_t off = mk0 + i * a.mk_ms + j * a.mk_ns;
            if (a.mask_dtype == DType::boolean) {
              if (static_cast<const std::uint8_t*>(a.mask)[off] == 0) return false;
            } else {
              s += static_cast<Acc>(static_cast<const T*>(a.mask)[off]);
            }
          }
          return true;
        };
        Acc m = -kInf;
        bool has_nan = false;
        for (std::int64_t j = 0; j < a.N; ++j) {
          Acc s = S(i, j);
          if (!kept(j, s)) {
            S(i, j) = -kInf;  // masked: contributes exp(-inf) = 0, never NaN
            continue;
          }
          S(i, j) = s;
          if (std::isnan(s)) has_nan = true;
          if (s > m) m = s;
        }
        Acc row_lse;
        acc.setZero();
        if (has_nan) {
          // A NaN that reaches a kept score poisons its row.
          acc.setConstant(kNaN);
          row_lse = kNaN;
        } else if (m == -kInf) {
          // No kept key (or every kept score is -inf): out = 0, lse = -inf.
          row_lse = -kInf;
        } else {
          Acc sum = 0;
          for (std::int64_t j = 0; j < a.N; ++j) {
            if (S(i, j) == -kInf) continue;  // skip, so a NaN in a masked v row stays out
            const Acc p = std::exp(S(i, j) - m);
            sum += p;
            acc.noalias() += p * V.row(j);
          }
          acc /= sum;
          row_lse = m + std::log(sum);
        }
        T* orow = orow0 + i * a.o_ms;
        for (std::int64_t c = 0; c < a.dv; ++c) orow[c * a.o_ds] = static_cast<T>(acc(c));
        if (lse) {
          lse[batch_offset(a, b, a.l_bs) + h * a.l_hs + i * a.l_ms] = static_cast<T>(row_lse);
        }
      }
    }
  }
}

template void attention<float, double>(const AttentionArgs&);
template void attention<double, double>(const AttentionArgs&);
template void attention<float, float>(const AttentionArgs&);

}  // namespace strata::reference
