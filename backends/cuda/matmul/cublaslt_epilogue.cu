// lt_gemm (cublas_gemm.hpp): a planned GEMM through cuBLASLt, with the bias
// added by its epilogue (CUBLASLT_EPILOGUE_BIAS) in the compute type before
// the output's one rounding. matmul_cublas.cu takes this path for a bias
// along out's rows, and for f16/bf16 accumulating without one.
#include <cstdint>

#include "cuda/matmul/cublas_gemm.hpp"

namespace strata::cuda {
namespace {

// RAII for cuBLASLt descriptors.
struct LtDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescs() {
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    if (c) (void)cublasLtMatrixLayoutDestroy(c);
    if (y) (void)cublasLtMatrixLayoutDestroy(y);
    if (x) (void)cublasLtMatrixLayoutDestroy(x);
    if (op) (void)cublasLtMatmulDescDestroy(op);
  }
};

void set_lt_batch(cublasLtMatrixLayout_t layout, Index count, Index stride) {
  const std::int32_t n = static_cast<std::int32_t>(count);
  const std::int64_t s = stride;
  CUBLAS_CHECK(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof n));
  CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &s, sizeof s));
}

}  // namespace

bool lt_gemm(const CublasHandles& h, cudaStream_t st, void* workspace, const Gemm& g, DType dt,
             cublasComputeType_t ct, const void* bias, bool accumulate) {
  const cudaDataType_t t = cuda_type(dt);
  LtDescs d;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, ct, CUDA_R_32F));
  const cublasOperation_t ta = g.x_layout.op, tb = g.y_layout.op;
  const cublasLtEpilogue_t epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                              sizeof epilogue));
  if (bias)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias));
  const bool xn = ta == CUBLAS_OP_N, yn = tb == CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.x, t, xn ? g.m : g.k, xn ? g.k : g.m, g.x_layout.ld));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.y, t, yn ? g.k : g.n, yn ? g.n : g.k, g.y_layout.ld));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.c, t, g.m, g.n, as_blas(g.c).ld));
  if (g.count > 1) {
    set_lt_batch(d.x, g.count, g.x_batch_stride);
    set_lt_batch(d.y, g.count, g.y_batch_stride);
    set_lt_batch(d.c, g.count, g.c_batch_stride);
  }
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
  const std::uint64_t workspace_bytes = kWorkspaceBytes;
  // Accumulating, a split-K reduction in place would sum partials in the
  // output type on top of out's values: only the compute-type scheme then.
  const std::uint32_t reduction = accumulate
                                      ? std::uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)
                                      : std::uint32_t(CUBLASLT_REDUCTION_SCHEME_INPLACE |
                                                      CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      d.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction, sizeof reduction));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(h.lt, d.op, d.x, d.y, d.c, d.c, d.pref, 1, &heuristic,
                                     &found) != CUBLAS_STATUS_SUCCESS ||
      found == 0)
    return false;
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  CUBLAS_CHECK(cublasLtMatmul(h.lt, d.op, &alpha, g.x.ptr, d.x, g.y.ptr, d.y, &beta, g.c.ptr, d.c,
                              g.c.ptr, d.c, &heuristic.algo, workspace, kWorkspaceBytes, st));
  return true;
}

}  // namespace strata::cuda
