// The default launches of the `reg` 16-bit row kernels (rows_reg.cuh) and
// the count of reg launches that the tests read.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cstdint>

#include "cuda/rows/rows_reg.cuh"
#include "cuda/rows/rows_reg_kernels.cuh"

namespace strata::cuda {

namespace {
std::atomic<std::uint64_t> g_reg_launches{0};
}  // namespace

// Testing hook for tests/cuda/test_cuda_rows16.cpp (declared there): how
// many reg kernels this process has launched, so that a test can tell them
// from their fallbacks.
std::uint64_t rows_reg_launches_for_test() { return g_reg_launches.load(); }

namespace fastrow {

void count_reg_launch() { g_reg_launches.fetch_add(1, std::memory_order_relaxed); }

template <class T>
bool norm_reg8(const RowParams& p, cudaStream_t st) {
  static_assert(sizeof(T) == 2);
  return by_width<8>(p, [&](auto tpr) {
    constexpr int TPR = decltype(tpr)::value;
    const int grid = row_grid(p.rows, 1);
    const bool w = p.ptr[2] != nullptr, b = p.ptr[3] != nullptr;
    if (w && b) launch_row_kernel(norm_reg8_kernel<T, TPR, true, true>, grid, TPR, st, p);
    if (w && !b) launch_row_kernel(norm_reg8_kernel<T, TPR, true, false>, grid, TPR, st, p);
    if (!w && b) launch_row_kernel(norm_reg8_kernel<T, TPR, false, true>, grid, TPR, st, p);
    if (!w && !b) launch_row_kernel(norm_reg8_kernel<T, TPR, false, false>, grid, TPR, st, p);
    count_reg_launch();
  });
}

template <class T>
bool softmax_reg4(const RowParams& p, cudaStream_t st) {
  static_assert(sizeof(T) == 2);
  return by_width<4>(p, [&](auto tpr) {
    constexpr int TPR = decltype(tpr)::value;
    launch_row_kernel(softmax_reg_kernel<T, TPR, 4>, row_grid(p.rows, 1), TPR, st, p);
    count_reg_launch();
  });
}

template bool norm_reg8<__half>(const RowParams&, cudaStream_t);
template bool norm_reg8<__nv_bfloat16>(const RowParams&, cudaStream_t);
template bool softmax_reg4<__half>(const RowParams&, cudaStream_t);
template bool softmax_reg4<__nv_bfloat16>(const RowParams&, cudaStream_t);

}  // namespace fastrow
}  // namespace strata::cuda
