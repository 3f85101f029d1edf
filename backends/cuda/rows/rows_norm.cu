// cuda layer_norm (out, x, weight, bias; scalar[0] = eps; biased variance)
// and rms_norm (out, x, weight; scalar[0] = eps) on f32, f64, f16, bf16:
// which of norm_kernels.cuh's kernels (or rows_reg.cu's) takes a call.
//  * 16-bit layer_norm rows of 2048, 4096 or 8192 elements: reg8's kernel
//    (rows_reg.cu); other lengths staged through shared memory ahead of use
//    (norm_fast's pipelined mode), which measured faster than unstaged rows
//    with two reductions, and than the `fused` form at 2048 columns;
//  * 16-bit rms_norm: the `fused` kernel;
//  * f32: norm_fast;
//  * f64 and layouts the fast path does not take: norm_kernel.
// How each form measured against the others: docs/log/ops.md, "16-bit rows
// and the transposed add" and "Rows16 reg". STRATA_ROWS_VARIANT selects the
// other forms in a tuning build (backends/cuda/lab/rows/).
#include "cuda/rows/norm_kernels.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "cuda/rows/rows_reg.cuh"
#include "cuda/rows/rows_variant.hpp"
#if STRATA_TUNING
#include "cuda/lab/rows/rows_candidates.hpp"
#endif

namespace strata::cuda {
namespace {

template <bool RMS, class T>
void norm(const IterArgs& a) {
  const RowParams p = make_row_params<T>(a, RMS ? 0b111 : 0b1111);  // out, x, weight(, bias)
  if (p.rows == 0 || p.n == 0) return;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  if constexpr (sizeof(T) == 2) {
    // STRATA_ROWS_VARIANT, checked on the first call: a candidate's name
    // is an error in a build without the lab.
    [[maybe_unused]] const RowsVariant variant = rows_variant();
#if STRATA_TUNING
    if (lab::norm16_candidate<RMS, T>(variant, p, st)) return;
#endif
    if constexpr (RMS) {
      if (launch_norm_fused<RMS, T>(p, st)) return;
    } else {
      if (fastrow::norm_reg8<T>(p, st)) return;
      if (launch_norm_fast<RMS, T>(p, fastrow::Geometry::narrow, st)) return;
    }
  } else {
    if (launch_norm_fast<RMS, T>(p, fastrow::Geometry::base, st)) return;
  }
  launch_norm_general<RMS, T>(p, st);
}

}  // namespace

std::vector<EwEntry> row_norm_entries() {
  std::vector<EwEntry> v;
  for_float_dtypes([&](DType dt, auto t) {
    using T = typename decltype(t)::type;
    v.push_back({"layer_norm", dt, &norm<false, T>});
    v.push_back({"rms_norm", dt, &norm<true, T>});
  });
  return v;
}

}  // namespace strata::cuda
