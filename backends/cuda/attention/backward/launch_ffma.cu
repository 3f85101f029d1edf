// Launches the backward's preprocess kernel (every dtype) and its FFMA
// kernels: f32 and f64, and bf16/f16 head dims over the mma kernels' reach.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "cuda/attention/backward/ffma.cuh"
#include "cuda/attention/backward/launchers.hpp"
#include "cuda/attention/backward/preprocess.cuh"
#include "cuda/cuda_check.hpp"

namespace strata::cuda::bwd {
namespace {

int smem_optin(int dev) {
  int optin = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return optin;
}

// The FFMA kernels' shared memory grows with the head dims, so the limit of
// each is raised once per device to all that the device grants (the
// launchers' resident_blocks raises it once, to the first call's size).
void allow_device_smem(const void* kernel, int dev) {
  static std::mutex m;
  static std::vector<std::pair<const void*, int>> done;
  const std::lock_guard<std::mutex> lock(m);
  for (const auto& x : done)
    if (x.first == kernel && x.second == dev) return;
  CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin(dev)));
  done.emplace_back(kernel, dev);
}

template <class S, class T>
void preprocess(const BwdParams& p, cudaStream_t st) {
  constexpr int kRowsPerBlock = 256 / 32;
  const std::int64_t grid = checked_grid((p.bh * p.Mp + kRowsPerBlock - 1) / kRowsPerBlock);
  preprocess_kernel<S, T><<<int(grid), 256, 0, st>>>(p);
}

template <class S, class T, int B>
void ffma(BwdParams p, int dev, cudaStream_t st) {
  const AttentionArgs& a = p.g.fwd;
  const std::size_t smem = std::size_t(ffma_layout(B, a.d, a.dv).total) * sizeof(T);
  allow_device_smem(reinterpret_cast<const void*>(&ffma_dkdv_kernel<S, T, B>), dev);
  allow_device_smem(reinterpret_cast<const void*>(&ffma_dq_kernel<S, T, B>), dev);
  if (a.N > 0) {  // N = 0: dk and dv are empty
    p.tiles = (a.N + B - 1) / B;
    const std::int64_t grid = checked_grid(p.tiles * a.batch_count() * a.Hkv);
    ffma_dkdv_kernel<S, T, B><<<int(grid), kFfmaThreads, smem, st>>>(p);
  }
  p.tiles = (a.M + B - 1) / B;
  const std::int64_t grid = checked_grid(p.tiles * p.bh);
  ffma_dq_kernel<S, T, B><<<int(grid), kFfmaThreads, smem, st>>>(p);
}

template <class S, class T>
void ffma_by_tile(const BwdParams& p, int tile, int dev, cudaStream_t st) {
  if (tile == 32)
    ffma<S, T, 32>(p, dev, st);
  else
    ffma<S, T, 8>(p, dev, st);
}

std::size_t compute_size(DType dt) { return dt == DType::f64 ? 8 : 4; }

}  // namespace

void launch_preprocess(const BwdParams& p, cudaStream_t st) {
  switch (p.g.dtype()) {
    case DType::f64:
      return preprocess<double, double>(p, st);
    case DType::bf16:
      return preprocess<__nv_bfloat16, float>(p, st);
    case DType::f16:
      return preprocess<__half, float>(p, st);
    default:
      return preprocess<float, float>(p, st);
  }
}

std::size_t ffma_smem(const AttentionArgs& a, int tile) {
  return std::size_t(ffma_layout(tile, a.d, a.dv).total) * compute_size(a.dtype());
}

int ffma_tile(const AttentionArgs& a, int dev) {
  const int optin = smem_optin(dev);
  for (int tile : {32, 8})
    if (ffma_smem(a, tile) <= std::size_t(optin)) return tile;
  return 0;
}

void launch_ffma(BwdParams p, int tile, int dev, cudaStream_t st) {
  switch (p.g.dtype()) {
    case DType::f64:
      return ffma_by_tile<double, double>(p, tile, dev, st);
    case DType::bf16:
      return ffma_by_tile<__nv_bfloat16, float>(p, tile, dev, st);
    case DType::f16:
      return ffma_by_tile<__half, float>(p, tile, dev, st);
    default:
      return ffma_by_tile<float, float>(p, tile, dev, st);
  }
}

}  // namespace strata::cuda::bwd
