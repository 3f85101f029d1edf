// Naive, obviously-correct softmax attention. Per (batch, head): gather Q, K,
// V into dense matrices of the accumulation type, S = scale * Q K^T, apply
// band and mask, row softmax with max subtraction, out = P V / rowsum.
// Speed is not a goal; being easy to check by eye is.
#include "reference/attention_reference.hpp"

#include <omp.h>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "strata/error.hpp"
#include "strata/host_memory.hpp"

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

// One (batch b, query head h) slice: M x N scores, softmax, times V.
template <class T, class Acc>
void one_head(const AttentionArgs& a, std::int64_t b, std::int64_t h) {
  constexpr Acc kInf = std::numeric_limits<Acc>::infinity();
  constexpr Acc kNaN = std::numeric_limits<Acc>::quiet_NaN();
  const std::int64_t hk = attn::kv_head(a, h);
  Mat<Acc> Q, K, V;
  gather(Q, attn::head_ptr<const T>(a.q, b, h), a.M, a.d, attn::row_stride(a.q),
         attn::col_stride(a.q));
  gather(K, attn::head_ptr<const T>(a.k, b, hk), a.N, a.d, attn::row_stride(a.k),
         attn::col_stride(a.k));
  gather(V, attn::head_ptr<const T>(a.v, b, hk), a.N, a.dv, attn::row_stride(a.v),
         attn::col_stride(a.v));
  // lazyProduct: a plain dot product per score, no blocking and no threads of
  // Eigen's own (which, nested in our loop or on a busy machine, cost more
  // than they save at these sizes).
  Mat<Acc> S = Q.lazyProduct(K.transpose());
  S *= static_cast<Acc>(a.scale);

  T* out = attn::head_ptr<T>(a.out, b, h);
  T* lse = a.lse.data ? attn::head_ptr<T>(a.lse, b, h) : nullptr;
  const std::int64_t mk0 = attn::head_offset(a.mask, b, h);
  const bool mask_bool = a.mask.dtype == DType::boolean;
  Eigen::Matrix<Acc, 1, Eigen::Dynamic> acc(a.dv);
  for (std::int64_t i = 0; i < a.M; ++i) {
    // Key j is kept when inside the band and not masked out; float masks add.
    auto kept = [&](std::int64_t j, Acc& s) {
      if (j < i + a.band_lo || j > i + a.band_hi) return false;
      if (a.mask.data) {
        const std::int64_t off = mk0 + i * attn::row_stride(a.mask) + j * attn::col_stride(a.mask);
        if (mask_bool) {
          if (static_cast<const std::uint8_t*>(a.mask.data)[off] == 0) return false;
        } else {
          s += static_cast<Acc>(static_cast<const T*>(a.mask.data)[off]);
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
        if (S(i, j) == -kInf) continue;  // masked keys never touch their v row
        const Acc p = std::exp(S(i, j) - m);
        sum += p;
        acc.noalias() += p * V.row(j);
      }
      acc /= sum;
      row_lse = m + std::log(sum);
    }
    T* orow = out + i * attn::row_stride(a.out);
    const std::int64_t ocs = attn::col_stride(a.out);
    for (std::int64_t c = 0; c < a.dv; ++c) orow[c * ocs] = static_cast<T>(acc(c));
    if (lse) lse[i * attn::row_stride(a.lse)] = static_cast<T>(row_lse);
  }
}

// a * b, or nullopt when it does not fit in 64 bits.
std::optional<std::uint64_t> mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Bytes one head's dense matrices take: S (M x N), Q (M x d), K (N x d),
// V (N x dv) and a dv row, in the accumulation type; nullopt on overflow.
std::optional<std::uint64_t> head_bytes(const AttentionArgs& a, std::size_t acc_size) {
  const auto M = static_cast<std::uint64_t>(a.M), N = static_cast<std::uint64_t>(a.N);
  const auto d = static_cast<std::uint64_t>(a.d), dv = static_cast<std::uint64_t>(a.dv);
  std::uint64_t elems = dv;
  for (auto [x, y] : {std::pair{M, N}, {M, d}, {N, d}, {N, dv}}) {
    const auto p = mul(x, y);
    if (!p || __builtin_add_overflow(elems, *p, &elems)) return std::nullopt;
  }
  return mul(elems, acc_size);
}

std::string mib(std::uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

template <class T, class Acc>
void attention(const AttentionArgs& a) {
  const std::int64_t heads = a.batch_count() * a.Hq;
  // The score matrix is materialised, so a long problem may need more memory
  // than there is: say so before allocating anything (a bad_alloc thrown
  // inside the parallel region below would terminate the process).
  const auto need = head_bytes(a, sizeof(Acc));
  const std::uint64_t avail = available_host_memory_bytes();
  if (!need || *need > avail)
    fail("softmax_attention", "the reference backend materialises the ", a.M, " x ", a.N,
         " score matrix and needs ",
         need ? std::to_string(*need) + " bytes (" + mib(*need) + ")"
              : std::string("more than 2^64 bytes"),
         " per head, but only ", avail, " bytes (", mib(avail),
         ") of memory are available; use the cpu or cuda backend, which stream the keys");
  // Threads over (batch, head) only when there is enough work to pay for them,
  // and no more at once than the memory holds.
  const double work = static_cast<double>(heads) * static_cast<double>(a.M) *
                      static_cast<double>(a.N) * static_cast<double>(a.d + a.dv);
  const std::uint64_t fit = *need == 0 ? heads : avail / *need;
  const int threads = static_cast<int>(std::clamp<std::int64_t>(
      std::min<std::uint64_t>(fit, static_cast<std::uint64_t>(omp_get_max_threads())), 1,
      std::max<std::int64_t>(heads, 1)));

  // No exception may leave an OpenMP region: the first one is kept and
  // rethrown after it (the remaining heads are skipped).
  std::exception_ptr first;
  std::atomic<bool> failed{false};
#pragma omp parallel for schedule(dynamic) num_threads(threads) if (heads > 1 && work > 3e7)
  for (std::int64_t bh = 0; bh < heads; ++bh) {
    if (failed.load(std::memory_order_relaxed)) continue;
    try {
      one_head<T, Acc>(a, bh / a.Hq, bh % a.Hq);
    } catch (...) {
#pragma omp critical(strata_reference_error)
      if (!first) first = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  }
  if (first) {
    try {
      std::rethrow_exception(first);
    } catch (const std::bad_alloc&) {
      fail("softmax_attention", "the reference backend ran out of memory: it needs ", *need,
           " bytes (", mib(*need), ") per head for the ", a.M, " x ", a.N,
           " score matrix and its operands");
    }
  }
}

template void attention<float, double>(const AttentionArgs&);
template void attention<double, double>(const AttentionArgs&);
template void attention<float, float>(const AttentionArgs&);

}  // namespace strata::reference
