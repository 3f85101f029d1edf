// The 16-bit row candidates of STRATA_ROWS_VARIANT (rows_candidates.hpp),
// each as measured against the default (docs/log/ops.md, "16-bit rows and
// the transposed add" and "Rows16 reg"):
//   base   layer_norm staged at every length (the default's form for
//          lengths other than 2048, 4096, 8192), rms_norm and softmax with
//          two reductions: lost to fused on softmax, equal on rms_norm;
//   fused  layer_norm on the fused kernel too: faster at 4096 columns,
//          slower at 2048, and both below the reg kernels;
//   reg    two vectors per thread on the reg kernels (the rest as fused):
//          layer_norm the fastest at 2048 columns, behind reg8 elsewhere;
//          softmax behind reg4;
//   reg4   four vectors: softmax the default's; layer_norm behind reg8;
//   reg8   eight vectors: layer_norm the default's; softmax behind reg4.
// Compiled only in a tuning build (-DSTRATA_TUNING=ON).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/lab/rows/norm_reg_kernel.cuh"
#include "cuda/lab/rows/rows_candidates.hpp"
#include "cuda/rows/norm_kernels.cuh"
#include "cuda/rows/rows_reg.cuh"
#include "cuda/rows/rows_reg_kernels.cuh"
#include "cuda/rows/softmax_kernels.cuh"

namespace strata::cuda::lab {
namespace {

// Vectors per thread of the reg kernels under v; 0 for the other variants.
int reg_vectors(RowsVariant v) {
  return v == RowsVariant::reg ? 2 : v == RowsVariant::reg4 ? 4 : v == RowsVariant::reg8 ? 8 : 0;
}

// layer_norm on the reg kernels with NV vectors per thread.
template <int NV, class T>
bool norm_reg(const RowParams& p, cudaStream_t st) {
  if constexpr (NV == 8) {
    return fastrow::norm_reg8<T>(p, st);
  } else {
    return fastrow::by_width<NV>(p, [&](auto tpr) {
      constexpr int TPR = decltype(tpr)::value;
      launch_row_kernel(fastrow::norm_reg_kernel<T, TPR, NV>, row_grid(p.rows, 1), TPR, st, p);
      fastrow::count_reg_launch();
    });
  }
}

// softmax on the reg kernels with NV vectors per thread.
template <int NV, class T>
bool softmax_reg(const RowParams& p, cudaStream_t st) {
  return fastrow::by_width<NV>(p, [&](auto tpr) {
    constexpr int TPR = decltype(tpr)::value;
    launch_row_kernel(fastrow::softmax_reg_kernel<T, TPR, NV>, row_grid(p.rows, 1), TPR, st, p);
    fastrow::count_reg_launch();
  });
}

}  // namespace

template <bool RMS, class T>
bool norm16_candidate(RowsVariant v, const RowParams& p, cudaStream_t st) {
  switch (v) {
    case RowsVariant::tuned:
      return false;
    case RowsVariant::base:
      return launch_norm_fast<RMS, T>(p, RMS ? fastrow::Geometry::base : fastrow::Geometry::narrow,
                                      st);
    default:
      break;
  }
  if constexpr (!RMS) {
    const int nv = reg_vectors(v);
    if (nv == 2 && norm_reg<2, T>(p, st)) return true;
    if (nv == 4 && norm_reg<4, T>(p, st)) return true;
    if (nv == 8 && norm_reg<8, T>(p, st)) return true;
  }
  return launch_norm_fused<RMS, T>(p, st);
}

template <bool Log, class T>
bool softmax16_candidate(RowsVariant v, const RowParams& p, cudaStream_t st) {
  switch (v) {
    case RowsVariant::tuned:
      return false;
    case RowsVariant::base:
      return launch_softmax_fast<Log, T>(p, st);
    default:
      break;
  }
  if constexpr (!Log) {
    const int nv = reg_vectors(v);
    if (nv == 2 && softmax_reg<2, T>(p, st)) return true;
    if (nv == 4 && softmax_reg<4, T>(p, st)) return true;
    if (nv == 8 && softmax_reg<8, T>(p, st)) return true;
  }
  return launch_softmax_fused<Log, T>(p, st);
}

#define STRATA_ROWS_CANDIDATES(T)                                                           \
  template bool norm16_candidate<false, T>(RowsVariant, const RowParams&, cudaStream_t);    \
  template bool norm16_candidate<true, T>(RowsVariant, const RowParams&, cudaStream_t);     \
  template bool softmax16_candidate<false, T>(RowsVariant, const RowParams&, cudaStream_t); \
  template bool softmax16_candidate<true, T>(RowsVariant, const RowParams&, cudaStream_t);
STRATA_ROWS_CANDIDATES(__half)
STRATA_ROWS_CANDIDATES(__nv_bfloat16)
#undef STRATA_ROWS_CANDIDATES

}  // namespace strata::cuda::lab
