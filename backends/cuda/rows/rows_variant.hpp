#pragma once
// Candidate forms of the 16-bit contiguous row kernels (rows_fast.cuh), for
// a GPU A/B in one build: STRATA_ROWS_VARIANT=<name>, read once per process.
// f32, f64 and every layout the fast path does not take ignore it.
//   tuned the default (runs s12r3 and s14r1, docs/ops-log.md): rows of 2048,
//         4096 or 8192 elements layer_norm as reg8, softmax as reg4;
//         other lengths layer_norm as base; rms_norm, log_softmax and
//         other softmax lengths as fused.
//   base  the default before run s12r3: layer_norm's rows staged through shared memory
//         (two reductions: mean, then squared deviations), softmax's max and
//         sum in two reductions with expf, rms_norm one reduction.
//   one   base's geometry, each op's statistics in one reduction: layer_norm
//         (count, mean, M2) pairs combined as Chan et al., softmax (max, sum)
//         pairs combined online; softmax's exp as ex2.approx of (x - max) *
//         log2(e) (one MUFU op).
//   flat  one's statistics, layer_norm unstaged with rms_norm's geometry
//         (4096 bf16: one 128-thread block per row, 4 vectors per thread).
//   warp  one's statistics, rows of 129-512 vectors (1032-4096 bf16) one
//         warp each (8 or 16 vectors per lane, 4 rows per block): no
//         __syncthreads, every load of the row in flight at once.
//   fused  rms_norm's geometry for all three ops (4096 bf16: one 128-thread
//          block per row, 4 vectors per thread), each op's statistics in
//          ONE reduction with a short chain (rows_fused.cuh): layer_norm
//          thread-local exact two-pass, then (count, sum, M2) combined
//          without division; softmax thread-local (max, sum of ex2) with the
//          exponentials kept in f32 registers (one MUFU per element; the
//          output is one multiply); rsqrt; weight and bias read in the
//          output pass (64-register cap, 8 blocks of 128 per SM).
//   fusedw fused with weight and bias loaded right after the row, in flight
//          during the reduction (85-register cap); softmax as fused.
//   reg    layer_norm and softmax rows of 2048, 4096 or 8192 elements on the
//          reg kernels (rows_reg.cuh: two vectors per thread, the row
//          widened once, one pass and one reduction of equal-count
//          statistics); every other shape, rms_norm and log_softmax as fused.
//   reg4   reg with four vectors per thread (4096 columns: 128 threads per
//          row, half reg's threads, so half its per-thread reduction and
//          addressing per row); layer_norm's weight and bias after the
//          reduction (64-register cap).
//   reg8   reg with eight vectors per thread (4096 columns: 64 threads per
//          row), layer_norm on its own kernel: the shifted values kept for
//          a one-FMA normalisation, weight and bias present or absent at
//          compile time, loaded after the reduction; softmax as reg's.
namespace strata::cuda {

enum class RowsVariant { tuned, base, one, flat, warp, fused, fusedw, reg, reg4, reg8 };

// The process's variant; an unknown name is a strata::Error naming it.
RowsVariant rows_variant();
const char* rows_variant_name(RowsVariant v);

}  // namespace strata::cuda
