// cuda sum_of_squares as a multi-tensor apply (chunk_table.cuh): each block
// sums the squares of one chunk of one tensor in f64 (4-element vector
// loads where the tensor is aligned) and writes its partial sum to its own
// slot of a stream-ordered scratch array; one block of a second kernel then
// adds the partials, each thread a fixed stride of them and the threads'
// sums in a fixed tree. No atomics: the same call gives the same bits every
// time. Scratch comes from the stream's pool, so a graph captures it.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/elementwise/ew_params.cuh"
#include "cuda/elementwise/ew_types.cuh"
#include "cuda/optim/chunk_table.cuh"
#include "cuda/optim/optim_cuda.hpp"
#include "cuda/runtime/stream_scratch.hpp"

namespace strata::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr std::int64_t kChunk = 65536;

using Table = ChunkTable<SquaresTensor, 256, 4096>;
struct SquaresParams {
  Table tab;
  double* partial;  // the call's partials; this launch's blocks write from `first`
  int first;
};
static_assert(sizeof(SquaresParams) <= kMaxParamBytes, "the table must fit a launch's parameters");

// The block's threads' values added in a fixed order (shuffles down each
// warp, then warp 0 over the warps' sums); thread 0 gets the total.
__device__ double block_sum(double v) {
  __shared__ double warp_sum[kWarps];
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kWarps ? warp_sum[threadIdx.x] : 0.0;
  if (threadIdx.x < 32)
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

template <class T>
__device__ __forceinline__ double sq(T x) {
  const double d = cvt<double>(x);
  return d * d;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    squares_kernel(const __grid_constant__ SquaresParams p) {
  const SquaresTensor& t = p.tab.tensors[p.tab.tensor_of[blockIdx.x]];
  const std::int64_t begin = static_cast<std::int64_t>(p.tab.chunk[blockIdx.x]) * kChunk;
  const std::int64_t end = t.numel < begin + kChunk ? t.numel : begin + kChunk;
  const T* x = static_cast<const T*>(t.data);
  double acc = 0.0;
  std::int64_t scalar_from = begin;
  if (vec4_aligned<T>(x)) {
    const Vec4<T>* xv = reinterpret_cast<const Vec4<T>*>(x + begin);
    const int nv = static_cast<int>((end - begin) / 4);
    int v = threadIdx.x;
    // Four independent loads in flight per thread, then the rest.
    for (; v + 3 * kThreads < nv; v += 4 * kThreads) {
      Vec4<T> a[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) a[u] = xv[v + u * kThreads];
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc += sq(a[u].v[j]);
    }
    for (; v < nv; v += kThreads) {
      const Vec4<T> a = xv[v];
#pragma unroll
      for (int j = 0; j < 4; ++j) acc += sq(a.v[j]);
    }
    scalar_from = begin + 4 * static_cast<std::int64_t>(nv);
  }
  for (std::int64_t i = scalar_from + threadIdx.x; i < end; i += kThreads) acc += sq(x[i]);
  acc = block_sum(acc);
  if (threadIdx.x == 0) p.partial[p.first + blockIdx.x] = acc;
}

// One block: thread t adds partials t, t + kThreads, ... in order, then the
// block's fixed tree.
__global__ void __launch_bounds__(kThreads)
    sum_partials_kernel(const double* partial, int n, double* out) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < n; i += kThreads) acc += partial[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *out = acc;
}

template <class T>
void squares_typed(const SumOfSquaresArgs& a) {
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  std::int64_t blocks = 0;
  for (int i = 0; i < a.count; ++i) blocks += (a.tensors[i].numel + kChunk - 1) / kChunk;
  check(blocks < (std::int64_t{1} << 31), "sum_of_squares", "the tensors hold ", blocks,
        " chunks of ", kChunk, " elements, too many for one call");
  const StreamScratch scratch(static_cast<std::size_t>(blocks) * sizeof(double), st);
  SquaresParams p{};
  p.partial = scratch.at<double>(0);
  p.first = 0;
  for_each_launch(p.tab, a.tensors, a.count, kChunk, [&](int nb) {
    squares_kernel<T><<<nb, kThreads, 0, st>>>(p);
    CUDA_CHECK_LAUNCH();
    p.first += nb;
  });
  sum_partials_kernel<<<1, kThreads, 0, st>>>(p.partial, static_cast<int>(blocks),
                                              static_cast<double*>(a.out));
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void sum_of_squares(const SumOfSquaresArgs& a) {
  switch (a.dtype) {
    case DType::f32:
      return squares_typed<float>(a);
    case DType::f64:
      return squares_typed<double>(a);
    case DType::f16:
      return squares_typed<__half>(a);
    case DType::bf16:
      return squares_typed<__nv_bfloat16>(a);
    default:
      fail("sum_of_squares", "no cuda kernel for ", dtype_name(a.dtype));
  }
}

}  // namespace strata::cuda
