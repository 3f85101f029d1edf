// The device's element-wise strided copy (strided_copy.hpp): a grid-stride
// kernel that decodes both layouts per element, and a shared-memory tiled
// kernel for the one layout it reads badly, a transpose of the last two
// dims.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "cuda/cuda_check.hpp"
#include "cuda/dispatch_int.hpp"
#include "cuda/strided_copy.hpp"

namespace strata::cuda {
namespace {

// Kernel argument for the strided copy: both layouts over one shape.
struct CopyParams {
  int rank;
  std::int64_t numel;
  std::int64_t shape[kMaxDims];
  std::int64_t dst_strides[kMaxDims];
  std::int64_t src_strides[kMaxDims];
  char* dst;
  const char* src;
};

template <class E>
__global__ void strided_copy_kernel(CopyParams p) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < p.numel;
       i += stride) {
    std::int64_t rest = i, doff = 0, soff = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const std::int64_t n = p.shape[d];
      const std::int64_t idx = rest % n;
      rest /= n;
      doff += idx * p.dst_strides[d];
      soff += idx * p.src_strides[d];
    }
    reinterpret_cast<E*>(p.dst)[doff] = reinterpret_cast<const E*>(p.src)[soff];
  }
}

// A transpose of the last two dims (the source unit-stride along rows, the
// destination along columns): the element kernel would read 4 bytes per
// 32-byte sector, so 32 x 32 tiles pass through shared memory instead and
// both sides move whole sectors. The leading dims are decoded once per tile.
constexpr int kTile = 32, kTileRows = 8;

template <class E>
__global__ void __launch_bounds__(kTile* kTileRows) transpose_copy_kernel(CopyParams p) {
  __shared__ E tile[kTile][kTile + 1];  // [col][row]; the pad keeps both phases conflict-free
  const int r = p.rank;
  const std::int64_t rows = p.shape[r - 2], cols = p.shape[r - 1];
  const std::int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  const std::int64_t per_matrix = row_tiles * col_tiles;
  const std::int64_t total = per_matrix * (p.numel / (rows * cols));
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (std::int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    std::int64_t rest = t / per_matrix, doff = 0, soff = 0;
    for (int d = r - 3; d >= 0; --d) {
      const std::int64_t idx = rest % p.shape[d];
      rest /= p.shape[d];
      doff += idx * p.dst_strides[d];
      soff += idx * p.src_strides[d];
    }
    const std::int64_t r0 = (t % per_matrix) / col_tiles * kTile;
    const std::int64_t c0 = (t % per_matrix) % col_tiles * kTile;
    const E* src = reinterpret_cast<const E*>(p.src) + soff;
    E* dst = reinterpret_cast<E*>(p.dst) + doff;
    __syncthreads();  // the previous tile's readers are done
#pragma unroll
    for (int i = 0; i < kTile / kTileRows; ++i) {
      const std::int64_t row = r0 + tx, col = c0 + ty + kTileRows * i;
      if (row < rows && col < cols)
        tile[ty + kTileRows * i][tx] = src[row * p.src_strides[r - 2] + col * p.src_strides[r - 1]];
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile / kTileRows; ++i) {
      const std::int64_t row = r0 + ty + kTileRows * i, col = c0 + tx;
      if (row < rows && col < cols)
        dst[row * p.dst_strides[r - 2] + col * p.dst_strides[r - 1]] = tile[tx][ty + kTileRows * i];
    }
  }
}

bool is_transpose(const CopyParams& p) {
  return p.rank >= 2 && p.src_strides[p.rank - 2] == 1 && p.src_strides[p.rank - 1] != 1 &&
         p.dst_strides[p.rank - 1] == 1 && p.shape[p.rank - 2] > 1 && p.shape[p.rank - 1] > 1;
}

// The unsigned integer of N bytes (N = 1, 2, 4, 8).
template <int N>
using UIntOfSize = std::conditional_t<
    N == 1, std::uint8_t,
    std::conditional_t<N == 2, std::uint16_t,
                       std::conditional_t<N == 4, std::uint32_t, std::uint64_t>>>;

template <class E>
void launch_strided_copy(const CopyParams& p, cudaStream_t st) {
  const int threads = 256;
  if (is_transpose(p)) {
    const std::int64_t rows = p.shape[p.rank - 2], cols = p.shape[p.rank - 1];
    const std::int64_t tiles =
        (rows + kTile - 1) / kTile * ((cols + kTile - 1) / kTile) * (p.numel / (rows * cols));
    transpose_copy_kernel<E>
        <<<static_cast<int>(tiles < 65536 ? tiles : 65536), kTile * kTileRows, 0, st>>>(p);
  } else {
    const std::int64_t want = (p.numel + threads - 1) / threads;
    const int blocks = static_cast<int>(want < 65536 ? want : 65536);
    strided_copy_kernel<E><<<blocks, threads, 0, st>>>(p);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void strided_copy_async(const StridedLayout& dst, const StridedLayout& src, std::size_t itemsize,
                        cudaStream_t st) {
  CopyParams p{};
  p.rank = dst.rank;
  p.numel = 1;
  for (int d = 0; d < dst.rank; ++d) {
    p.shape[d] = dst.shape[d];
    p.dst_strides[d] = dst.strides[d];
    p.src_strides[d] = src.strides[d];
    p.numel *= dst.shape[d];
  }
  if (p.numel == 0) return;
  p.dst = static_cast<char*>(dst.data);
  p.src = static_cast<const char*>(src.data);
  // The kernels copy bits: an unsigned integer of the item's size.
  const bool copied =
      itemsize <= 8 && dispatch_int<1, 2, 4, 8>(static_cast<int>(itemsize), [&](auto size) {
        launch_strided_copy<UIntOfSize<decltype(size)::value>>(p, st);
      });
  if (!copied) fail("cuda.copy_strided", "unsupported item size ", itemsize);
}

}  // namespace strata::cuda
