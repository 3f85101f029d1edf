// See matmul_round16.cuh. One thread per element of out, in acc's
// row-major order: acc is read coalesced, out through its strides.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/matmul/matmul_round16.cuh"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

using Index = std::int64_t;

struct Round16Params {
  int rank;
  Index count;
  Index shape[kMaxDims];
  Index strides[kMaxDims];  // out's, elements
  Index bias_stride;
  const float* acc;
  const void* bias;
  void* out;
  bool accumulate;
};

template <typename T>
__device__ __forceinline__ double to_f64(T x);
template <>
__device__ __forceinline__ double to_f64<__half>(__half x) {
  return static_cast<double>(__half2float(x));
}
template <>
__device__ __forceinline__ double to_f64<__nv_bfloat16>(__nv_bfloat16 x) {
  return static_cast<double>(__bfloat162float(x));
}

template <typename T>
__device__ __forceinline__ T from_f64(double x);
template <>
__device__ __forceinline__ __half from_f64<__half>(double x) {
  return __double2half(x);  // round to nearest even from the f64 value
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f64<__nv_bfloat16>(double x) {
  return __double2bfloat16(x);
}

template <typename T>
__global__ void round16_kernel(Round16Params p) {
  const Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.count) return;
  Index rest = i, off = 0, n = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const Index idx = rest % p.shape[d];
    rest /= p.shape[d];
    if (d == p.rank - 1) n = idx;
    off += idx * p.strides[d];
  }
  T* o = static_cast<T*>(p.out) + off;
  // f32 + 16-bit + 16-bit: exact in f64 unless the exponents lie more than
  // ~29 apart, and then within 2^-53 of it; the rounding below is the one.
  double v = p.acc ? static_cast<double>(p.acc[i]) : 0.0;
  if (p.bias) v += to_f64(static_cast<const T*>(p.bias)[n * p.bias_stride]);
  if (p.accumulate) v += to_f64(*o);
  *o = from_f64<T>(v);
}

}  // namespace

void round16_finish(const Operand& out, const float* acc, const Operand* bias, bool accumulate,
                    cudaStream_t st) {
  check(out.dtype == DType::f16 || out.dtype == DType::bf16, "matmul",
        "cuda: the 16-bit rounding pass got ", dtype_name(out.dtype));
  Round16Params p{};
  p.rank = out.rank;
  p.count = 1;
  for (int d = 0; d < out.rank; ++d) {
    p.shape[d] = out.shape[d];
    p.strides[d] = out.strides[d];
    p.count *= out.shape[d];
  }
  if (p.count == 0) return;
  p.acc = acc;
  p.bias = bias ? bias->data : nullptr;
  p.bias_stride = bias ? bias->strides[0] : 0;
  p.out = out.data;
  p.accumulate = accumulate;
  const int threads = 256;
  const auto blocks = static_cast<unsigned>((p.count + threads - 1) / threads);
  if (out.dtype == DType::f16)
    round16_kernel<__half><<<blocks, threads, 0, st>>>(p);
  else
    round16_kernel<__nv_bfloat16><<<blocks, threads, 0, st>>>(p);
  CUDA_CHECK_LAUNCH();
}

}  // namespace strata::cuda
