// cuda matmul and linear through cuBLAS (and cuBLASLt for the bias).
//
// Row-major without copies: cuBLAS is column-major, and a row-major [M, N]
// out with row stride ld is a column-major [N, M] matrix with the same ld,
// so a row-major out is computed as out^T = b^T a^T. Each input is then
// either column-major in cuBLAS's sense (CUBLAS_OP_N) or row-major
// (CUBLAS_OP_T): a transposed view is a flag, not a copy. A column-major out
// (unit row stride) is computed as out = a b directly. Layouts cuBLAS cannot
// take (both strides != 1, zero or negative strides, overlapping rows, an
// ld beyond int) are copied to contiguous temporaries first through the
// runtime's strided copy (strided_copy.hpp); an out it cannot write goes
// through a temporary that is copied out at the end.
//
// Batch: the batch dims of a, b and out are merged where every operand
// allows; one dim left (strides >= 0) is cublasGemmStridedBatchedEx (a
// broadcast operand has batch stride 0), more are cublasGemmBatchedEx with
// pointer arrays computed on the device.
//
// Types and precision: f64 in CUBLAS_COMPUTE_64F; f16/bf16 in
// CUBLAS_COMPUTE_32F (and reductions in f32: the handle disallows
// reduced-precision reductions); f32 highest in CUBLAS_COMPUTE_32F (no
// TF32), medium in CUBLAS_COMPUTE_32F_FAST_TF32. cuBLAS has no 3xTF32 mode
// (its FP32 emulation, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, is BF16x9 and
// for Blackwell), so high runs as highest.
//
// linear's bias: cuBLASLt with CUBLASLT_EPILOGUE_BIAS when out is row-major
// (the bias runs along the rows of out^T), the bias is contiguous, the batch
// is uniform and the dtype is not f64; otherwise out is filled with the bias
// broadcast (the strided copy) and the GEMM accumulates (beta = 1). f16 and
// bf16 always take the epilogue (copying what must be copied for it):
// beta = 1 rounds the product to the output type before the bias is added.
//
// MatmulArgs::accumulate (out += a b + bias): beta = 1 with C = D = out
// (cuBLAS and cuBLASLt read C in the compute type, so f16/bf16 add out's
// values in f32 and round once); an out that goes through a temporary is
// copied into it first. The bias then: cuBLASLt's epilogue with beta = 1
// (D = a b + C + bias) where it applies (above); elsewhere it cannot be
// filled into out, so out += ones [M, 1] bias [1, N] runs first as a K = 1
// GEMM (beta = 1, f32 highest: exact products) and the product is added
// after it with beta = 1. K = 0 with a bias is that K = 1 GEMM alone.
//
// The handles, workspace and temporaries: cublas_context.hpp; the GEMM
// calls: cublas_gemm.cu (cuBLAS) and cublaslt_epilogue.cu (cuBLASLt).
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/matmul/cublas_context.hpp"
#include "cuda/matmul/cublas_gemm.hpp"
#include "cuda/matmul/matmul_cuda.hpp"
#include "cuda/strided_copy.hpp"
#include "strata/dtype.hpp"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

BlasMatrix matrix_of(const Operand& op, int batch_rank, Index rows, Index cols) {
  return {static_cast<char*>(op.data), rows, cols, op.strides[batch_rank],
          op.strides[batch_rank + 1]};
}

// A contiguous [batch..., rows, cols] layout over `data`, shaped like `like`.
Operand contiguous_like(const Operand& like, void* data) {
  Operand o = like;
  o.data = data;
  Index s = 1;
  for (int d = like.rank - 1; d >= 0; --d) {
    o.strides[d] = s;
    s *= like.shape[d];
  }
  return o;
}

Index numel(const Operand& o) {
  Index n = 1;
  for (int d = 0; d < o.rank; ++d) n *= o.shape[d];
  return n;
}

// n elements of `item_bytes` bytes each set to the bit pattern `bits` (a constant
// of the element type, e.g. 1).
__global__ void fill_bits(void* p, Index n, int item_bytes, unsigned long long bits) {
  const Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (item_bytes == 2)
    static_cast<std::uint16_t*>(p)[i] = static_cast<std::uint16_t>(bits);
  else if (item_bytes == 4)
    static_cast<std::uint32_t*>(p)[i] = static_cast<std::uint32_t>(bits);
  else
    static_cast<unsigned long long*>(p)[i] = bits;
}

// The bit pattern of 1 in dt.
unsigned long long one_bits(DType dt) {
  switch (dt) {
    case DType::f64:
      return 0x3FF0000000000000ull;
    case DType::f16:
      return 0x3C00u;
    case DType::bf16:
      return 0x3F80u;
    default:
      return 0x3F800000u;
  }
}

// The bias broadcast to `dst`'s shape (batch..., M, N): stride 0 but along N.
Operand bias_broadcast(const Operand& bias, const Operand& dst) {
  Operand s = dst;
  s.data = bias.data;
  for (int d = 0; d < dst.rank; ++d) s.strides[d] = 0;
  s.strides[dst.rank - 1] = bias.strides[0];
  return s;
}

// The batch dims of three operands (x, y, c) with size-1 dims dropped and
// neighbours merged where all three allow.
struct MergedBatch {
  struct Dim {
    Index size, strides[3];
  };
  Dim dims[kMaxDims];
  int count = 0;
  // At most one dim left, with non-negative strides (c's positive): one
  // strided-batched call covers the batch.
  bool uniform() const {
    return count == 0 || (count == 1 && dims[0].strides[0] >= 0 && dims[0].strides[1] >= 0 &&
                          dims[0].strides[2] > 0);
  }
};

MergedBatch merge_batch(const MatmulArgs& args, const Operand& x, const Operand& y,
                        const Operand& c) {
  MergedBatch m;
  for (int d = 0; d < args.batch_rank; ++d) {
    if (args.batch_shape[d] == 1) continue;
    const MergedBatch::Dim cur{args.batch_shape[d], {x.strides[d], y.strides[d], c.strides[d]}};
    MergedBatch::Dim* last = m.count > 0 ? &m.dims[m.count - 1] : nullptr;
    if (last != nullptr && last->strides[0] == cur.strides[0] * cur.size &&
        last->strides[1] == cur.strides[1] * cur.size &&
        last->strides[2] == cur.strides[2] * cur.size) {
      last->size *= cur.size;
      for (int j = 0; j < 3; ++j) last->strides[j] = cur.strides[j];
    } else {
      m.dims[m.count++] = cur;
    }
  }
  return m;
}

// out [batch..., M, N] += bias[n] broadcast over rows and the batch, as the
// GEMM out += ones [batch..., M, 1] bias [batch..., 1, N] (batch strides 0)
// with beta = 1 (f32 highest: the products 1 * bias are exact), in out's
// dtype; f16/bf16 add in f32 and round once. `scratch` holds the ones.
void accumulate_bias(const MatmulArgs& args, const Operand& out, Scratch& scratch,
                     cudaStream_t st) {
  const DType dt = out.dtype;
  const std::size_t item_bytes = itemsize(dt);
  const int batch_rank = args.batch_rank;
  void* ones = scratch.get(std::size_t(args.M) * item_bytes);
  const int threads = 256;
  fill_bits<<<static_cast<unsigned>((args.M + threads - 1) / threads), threads, 0, st>>>(
      ones, args.M, static_cast<int>(item_bytes), one_bits(dt));
  CUDA_CHECK_LAUNCH();
  MatmulArgs r;
  r.batch_rank = batch_rank;
  for (int d = 0; d < batch_rank; ++d) r.batch_shape[d] = args.batch_shape[d];
  r.M = args.M;
  r.N = args.N;
  r.K = 1;
  r.a = out;
  r.a.data = ones;
  r.a.shape[batch_rank + 1] = 1;
  r.b = out;
  r.b.data = args.bias.data;
  r.b.shape[batch_rank] = 1;
  for (int d = 0; d < batch_rank; ++d) r.a.strides[d] = r.b.strides[d] = 0;
  r.a.strides[batch_rank] = 1;
  r.a.strides[batch_rank + 1] = 1;
  r.b.strides[batch_rank] = 0;
  r.b.strides[batch_rank + 1] = args.bias.strides[0];
  r.out = out;
  r.precision = Precision::highest;
  r.accumulate = true;
  r.stream = args.stream;
  matmul_cublas(r);
}

}  // namespace

const char* matmul_cublas_supports(const MatmulArgs& a) {
  const Index batch = a.batch_count();
  if (a.M > INT_MAX || a.N > INT_MAX || a.K > INT_MAX || batch > INT_MAX)
    return "M, N, K and the batch count must fit cuBLAS's int (2^31 - 1)";
  return nullptr;
}

void matmul_cublas(const MatmulArgs& args) {
  cudaStream_t st = static_cast<cudaStream_t>(args.stream);
  const int dev = current_device();
  keep_pool_warm(dev);
  Scratch scratch(st);
  const DType dt = args.out.dtype;
  const std::size_t item_bytes = itemsize(dt);
  const int batch_rank = args.batch_rank;
  const Index M = args.M, N = args.N, K = args.K;
  const bool has_bias = args.bias.data != nullptr;

  if (K == 0) {  // out = bias broadcast, or 0 (accumulate: out += bias, or nothing)
    if (args.accumulate) {
      if (has_bias) accumulate_bias(args, args.out, scratch, st);
      return;
    }
    if (has_bias) {
      strided_copy_async(args.out, bias_broadcast(args.bias, args.out), item_bytes, st);
    } else {
      void* zero = scratch.get(item_bytes);
      CUDA_CHECK(cudaMemsetAsync(zero, 0, item_bytes, st));
      Operand z = args.out;
      z.data = zero;
      for (int d = 0; d < z.rank; ++d) z.strides[d] = 0;
      strided_copy_async(args.out, z, item_bytes, st);
    }
    return;
  }

  // f16/bf16 with a bias go through cuBLASLt's epilogue, which adds the
  // bias in f32 before the one rounding: beta = 1 over an out filled with
  // the bias rounds the product to f16 first (errors of one ulp of the
  // product; docs/guide/matmul.md, "Known deviations"). So those calls
  // take the epilogue's layout: a contiguous bias, a row-major out and one
  // batch stride, by copies where the caller's layouts are otherwise.
  // cuBLASLt refuses (CUBLAS_STATUS_NOT_SUPPORTED) operands that are not
  // 16-byte aligned, which views at an odd offset are: those go through
  // the aligned scratch copies too.
  auto aligned16 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  const bool narrow_bias = has_bias && (dt == DType::f16 || dt == DType::bf16);
  const bool copy_all = narrow_bias && (!merge_batch(args, args.a, args.b, args.out).uniform() ||
                                        !aligned16(args.a.data) || !aligned16(args.b.data) ||
                                        !aligned16(args.out.data));
  const void* bias_ptr = args.bias.data;
  const bool bias_contig = has_bias && (args.bias.strides[0] == 1 || N == 1);
  if (narrow_bias && (!bias_contig || !aligned16(bias_ptr))) {
    Operand cb = args.bias;
    cb.data = scratch.get(std::size_t(N) * item_bytes);
    cb.strides[0] = 1;
    strided_copy_async(cb, args.bias, item_bytes, st);
    bias_ptr = cb.data;
  }

  // Inputs cuBLAS cannot take: contiguous copies.
  Operand A = args.a, B = args.b;
  if (copy_all || !as_blas(matrix_of(A, batch_rank, M, K)).ok) {
    A = contiguous_like(args.a, scratch.get(numel(args.a) * item_bytes));
    strided_copy_async(A, args.a, item_bytes, st);
  }
  if (copy_all || !as_blas(matrix_of(B, batch_rank, K, N)).ok) {
    B = contiguous_like(args.b, scratch.get(numel(args.b) * item_bytes));
    strided_copy_async(B, args.b, item_bytes, st);
  }
  // The output: row-major (c^T = b^T a^T, preferred: the usual trick, and
  // what lets cuBLASLt's bias run along out^T's rows), column-major
  // (c = a b) or a contiguous row-major temporary.
  Operand O = args.out;
  const BlasMatrix om = matrix_of(O, batch_rank, M, N);
  const BlasLayout o_row = as_blas(om.transposed()), o_col = as_blas(om);
  const bool row_out = o_row.ok && o_row.op == CUBLAS_OP_N;
  const bool col_out = !row_out && !narrow_bias && o_col.ok && o_col.op == CUBLAS_OP_N;
  const bool temp_out = (!row_out && !col_out) || copy_all;
  if (temp_out) {
    O = contiguous_like(args.out, scratch.get(numel(args.out) * item_bytes));
    if (args.accumulate) strided_copy_async(O, args.out, item_bytes, st);  // beta = 1 reads it
  }

  Gemm g;
  const BlasMatrix am = matrix_of(A, batch_rank, M, K), bm = matrix_of(B, batch_rank, K, N),
                   cm = matrix_of(O, batch_rank, M, N);
  if (col_out) {
    g.x = am;
    g.y = bm;
    g.c = cm;
    g.m = M;
    g.n = N;
  } else {
    g.x = bm.transposed();
    g.y = am.transposed();
    g.c = cm.transposed();
    g.m = N;
    g.n = M;
  }
  g.k = K;
  g.x_layout = as_blas(g.x);
  g.y_layout = as_blas(g.y);
  const Operand* x_operand = col_out ? &A : &B;
  const Operand* y_operand = col_out ? &B : &A;

  // Batch dims: one strided-batched call where they merge into one.
  const MergedBatch batch = merge_batch(args, *x_operand, *y_operand, O);
  g.count = args.batch_count();
  g.uniform = batch.uniform();
  if (batch.count == 1) {
    g.x_batch_stride = batch.dims[0].strides[0];
    g.y_batch_stride = batch.dims[0].strides[1];
    g.c_batch_stride = batch.dims[0].strides[2];
  }
  g.batch_rank = batch_rank;
  for (int d = 0; d < batch_rank; ++d) {
    g.batch_shape[d] = args.batch_shape[d];
    g.batch_strides[0][d] = x_operand->strides[d];
    g.batch_strides[1][d] = y_operand->strides[d];
    g.batch_strides[2][d] = O.strides[d];
  }

  CublasHandles& h = cublas_handles(dev);
  void* workspace = bind_stream(h, dev, st);
  const cublasComputeType_t ct = compute_type(dt, args.precision);

  bool done = false;
  if (has_bias && !col_out && dt != DType::f64 && g.uniform && (bias_contig || narrow_bias))
    done = lt_gemm(h, st, workspace, g, dt, ct, bias_ptr, args.accumulate);
  // f16/bf16 accumulating without a bias: cuBLASLt too (cublasGemmEx with
  // beta = 1 picked slower kernels for the decoder's projections).
  if (!done && !has_bias && args.accumulate && !col_out && g.uniform &&
      (dt == DType::f16 || dt == DType::bf16))
    done = lt_gemm(h, st, workspace, g, dt, ct, nullptr, true);
  // (Should cuBLASLt offer no algorithm for an f16/bf16 call, the fallback
  // below is right up to that double rounding.)
  if (!done) {
    if (has_bias && args.accumulate) {
      // O += bias first (its own GEMM, on this thread's handle, which it
      // leaves on the same stream and workspace), then O += a b.
      accumulate_bias(args, O, scratch, st);
    } else if (has_bias) {
      strided_copy_async(O, bias_broadcast(args.bias, O), item_bytes, st);
    }
    blas_gemm(h, st, scratch, g, dt, ct, has_bias || args.accumulate);
  }
  if (temp_out) strided_copy_async(args.out, O, item_bytes, st);
}

}  // namespace strata::cuda
