// cuda where and fill on every dtype, the SM count the launchers size
// their grids by, and the engine's A/B switches (tiled path, flat grid).

#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/engine.cuh"
#include "cuda/elementwise/ew_types.cuh"

namespace strata::cuda {

int sm_count() {
  static int cached[64] = {};
  // One visible device: it is the current one, no cudaGetDevice per launch.
  static const int ndev = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  }();
  int dev = 0;
  if (ndev != 1) CUDA_CHECK(cudaGetDevice(&dev));
  if (dev >= 64) dev = 63;
  if (cached[dev] == 0) {
    int n = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    cached[dev] = n;  // a benign race: every thread stores the same value
  }
  return cached[dev];
}

namespace {

template <DType D>
void where(const IterArgs& a) {
  using T = cuda_t<D>;
  launch_elementwise<T, bool, T, T>(a, WhereOp<T>{});
}

template <DType D>
void fill(const IterArgs& a) {
  using T = cuda_t<D>;
  launch_elementwise<T>(a, FillOp<T>{cvt<T>(a.scalar[0])});
}

}  // namespace

std::vector<EwEntry> ew_misc_entries() {
  std::vector<EwEntry> v;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (v.push_back({"where", kAllDTypes[I], &where<kAllDTypes[I]>}), ...);
    (v.push_back({"fill", kAllDTypes[I], &fill<kAllDTypes[I]>}), ...);
  }
  (std::make_index_sequence<7>{});
  return v;
}

}  // namespace strata::cuda
