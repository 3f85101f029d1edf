#pragma once
// STRATA_ROWS_VARIANT: the form of the 16-bit contiguous row kernels
// (layer_norm, rms_norm, softmax, log_softmax), read once per process. f32,
// f64 and every layout the fast path does not take ignore it.
//   tuned  the default (rows_norm.cu, rows_reduce.cu say which kernel takes
//          which row).
// The other names select the candidates that lost a measurement against it
// (docs/log/ops.md, "16-bit rows and the transposed add" and "Rows16 reg"),
// built only in a tuning build (backends/cuda/lab/rows/rows_candidates.cu);
// in any other build they are an error:
//   base   layer_norm staged at every length, rms_norm and softmax with two
//          reductions (norm_fast, softmax_fast);
//   fused  every op on the fused kernels;
//   reg    layer_norm and softmax rows of 2048, 4096 or 8192 elements on
//          the reg kernels with two vectors per thread, the rest as fused;
//   reg4   the same with four vectors per thread;
//   reg8   the same with eight.
namespace strata::cuda {

enum class RowsVariant { tuned, base, fused, reg, reg4, reg8 };

// The process's variant; an unknown name, or a candidate's in a build
// without the lab, is a strata::Error naming it.
RowsVariant rows_variant();
const char* rows_variant_name(RowsVariant v);

}  // namespace strata::cuda
