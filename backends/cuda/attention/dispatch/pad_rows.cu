// The attention launcher's pad pass (dispatch/pad_rows.hpp): 16-bit rows copied
// into rows of a multiple of 8 elements, zeros after the source's columns.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/attention/dispatch/pad_rows.hpp"
#include "cuda/cuda_check.hpp"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

constexpr const char* kOp = "softmax_attention";
constexpr int kThreads = 256;
constexpr std::int64_t kMaxInner = std::int64_t(1) << 31;  // inner * chunks: a 32-bit index
constexpr std::uint32_t kMaxGridY = 65535;

// Up to three copies (q, k, v) in one launch, blockIdx.z picking the copy.
struct PadBatch {
  PadPlan p[kMaxPadJobs];
  const std::uint16_t* src[kMaxPadJobs];
  std::uint16_t* dst[kMaxPadJobs];
};

// Thread i of blockIdx.x's row of blocks writes chunk i % chunks of inner
// row i / chunks, for each outer index blockIdx.y + k gridDim.y. VEC: the
// two 8-byte halves of the chunk in one load each (the source row is
// 8-byte aligned and d a multiple of 4, so each half is wholly inside or
// wholly past column d); otherwise element by element.
template <bool VEC>
__device__ __forceinline__ void pad_rows(const PadPlan& p, const std::uint16_t* src,
                                         std::uint16_t* dst) {
  const std::uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  const std::uint32_t chunks = std::uint32_t(p.chunks);
  if (i >= p.inner * chunks) return;
  const std::uint32_t r = i / chunks, c = i - r * chunks;
  const int col = int(c) * 8;
  const std::int64_t row_len = std::int64_t(chunks) * 8;
  for (std::uint32_t o = blockIdx.y; o < p.outer_count; o += gridDim.y) {
    std::int64_t off = std::int64_t(r) * p.inner_stride;
    std::uint32_t t = o;
    for (int k = p.outer_dims - 1; k >= 0; --k) {
      const std::uint32_t n = p.outer_shape[k];
      off += std::int64_t(t % n) * p.outer_stride[k];
      t /= n;
    }
    const std::uint16_t* s = src + off + col;
    uint4 v;
    if constexpr (VEC) {
      uint2 lo = make_uint2(0u, 0u), hi = make_uint2(0u, 0u);
      if (col < p.d) lo = __ldg(reinterpret_cast<const uint2*>(s));
      if (col + 4 < p.d) hi = __ldg(reinterpret_cast<const uint2*>(s + 4));
      v = make_uint4(lo.x, lo.y, hi.x, hi.y);
    } else {
      std::uint32_t w[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const std::uint32_t a = col + 2 * e < p.d ? __ldg(s + 2 * e) : 0u;
        const std::uint32_t b = col + 2 * e + 1 < p.d ? __ldg(s + 2 * e + 1) : 0u;
        w[e] = a | (b << 16);
      }
      v = make_uint4(w[0], w[1], w[2], w[3]);
    }
    *reinterpret_cast<uint4*>(dst + (std::int64_t(o) * p.inner + r) * row_len + col) = v;
  }
}

template <int J>
__device__ __forceinline__ void pad_job(const PadBatch& b) {
  if (b.p[J].vec)
    pad_rows<true>(b.p[J], b.src[J], b.dst[J]);
  else
    pad_rows<false>(b.p[J], b.src[J], b.dst[J]);
}

// Constant indices into the parameter arrays (a runtime index would copy
// them to local memory).
__global__ void __launch_bounds__(kThreads) pad_rows_kernel(const PadBatch b) {
  static_assert(kMaxPadJobs == 3, "one case per copy");
  switch (blockIdx.z) {
    case 0:
      pad_job<0>(b);
      break;
    case 1:
      pad_job<1>(b);
      break;
    default:
      pad_job<2>(b);
      break;
  }
}

}  // namespace

bool plan_pad(const Operand& x, std::int64_t row, PadPlan& p) {
  p = PadPlan{};
  const int r = x.rank;
  if (r < 2 || x.strides[r - 1] != 1) return false;
  const std::int64_t d = x.shape[r - 1];
  check(row % 8 == 0 && row >= d && d >= 1 && row < (std::int64_t(1) << 20), kOp,
        "cuda pad pass: row of ", row, " elements for ", d, " columns");
  p.d = int(d);
  p.chunks = int(row / 8);
  // Row dims of more than one row, outermost first; the copy's size.
  std::int64_t shape[kMaxDims], stride[kMaxDims];
  int n = 0;
  std::int64_t rows = 1;
  for (int i = 0; i < r - 1; ++i) {
    if (x.shape[i] == 1) continue;
    if (x.shape[i] == 0) return true;  // nothing to copy (rows = 0)
    check(rows <= (std::int64_t(1) << 62) / row / x.shape[i], kOp,
          "cuda pad pass: copy too large (dim ", i, " of ", x.shape[i], ")");
    rows *= x.shape[i];
    shape[n] = x.shape[i];
    stride[n++] = x.strides[i];
  }
  // The innermost dim, with the dims above it the source lays out
  // contiguously after it, while a 32-bit thread index covers their chunks.
  std::int64_t inner = 1, inner_stride = 0;
  int k = n;
  if (k > 0) {
    inner = shape[k - 1];
    inner_stride = stride[k - 1];
    --k;
    while (k > 0 && stride[k - 1] == inner_stride * inner &&
           shape[k - 1] < kMaxInner / (inner * p.chunks)) {
      inner *= shape[k - 1];
      --k;
    }
  }
  // Past the kernel's 32-bit indices: the generic copy takes it.
  if (inner >= kMaxInner / p.chunks) return false;
  std::int64_t outer = 1;
  for (int i = 0; i < k; ++i) {
    outer *= shape[i];
    p.outer_shape[i] = std::uint32_t(shape[i]);
    p.outer_stride[i] = stride[i];
  }
  if (outer > 0xffffffffLL) return false;
  p.outer_dims = k;
  p.outer_count = std::uint32_t(outer);
  p.inner = std::uint32_t(inner);
  p.inner_stride = inner_stride;
  p.rows = rows;
  bool vec = (reinterpret_cast<std::uintptr_t>(x.data) & 7u) == 0 && d % 4 == 0;
  for (int i = 0; i < n; ++i) vec = vec && stride[i] % 4 == 0;
  p.vec = vec;
  return true;
}

void pad_rows_async(const PadJob* jobs, int n, cudaStream_t st) {
  check(n >= 0 && n <= kMaxPadJobs, kOp, "cuda pad pass: ", n, " copies in one launch");
  PadBatch b{};
  std::int64_t blocks_x = 0;
  std::uint32_t outer = 0;
  int k = 0;
  for (int i = 0; i < n; ++i) {
    const PadJob& j = jobs[i];
    check((reinterpret_cast<std::uintptr_t>(j.dst) & 15u) == 0, kOp,
          "cuda pad pass: destination not 16-byte aligned");
    if (j.plan.rows == 0) continue;
    b.p[k] = j.plan;
    b.src[k] = static_cast<const std::uint16_t*>(j.src);
    b.dst[k] = static_cast<std::uint16_t*>(j.dst);
    blocks_x =
        std::max(blocks_x, (std::int64_t(j.plan.inner) * j.plan.chunks + kThreads - 1) / kThreads);
    outer = std::max(outer, j.plan.outer_count);
    ++k;
  }
  if (k == 0) return;
  const dim3 grid(unsigned(blocks_x), std::min(outer, kMaxGridY), unsigned(k));
  pad_rows_kernel<<<grid, kThreads, 0, st>>>(b);
  CUDA_CHECK_LAUNCH();
}

}  // namespace strata::cuda
