#pragma once
// The pieces of the Hopper warpgroup MMA (wgmma, sm_90a) around the
// instructions themselves (sm90/wgmma_ops.cuh, generated): shared-memory
// operand descriptors, the fence, commit and wait that order the
// asynchronous instructions, and the proxy fence before they read shared
// memory. The instructions run asynchronously: fence() before the first one
// that reads registers written by ordinary code, then commit() and wait(),
// and touch_regs() so the compiler reads the accumulators only after the
// wait. Everything here exists only in an sm_90a build (STRATA_CUDA_WGMMA).
#include <cstdint>

namespace strata::cuda::wgmma {

// Shared-memory matrix descriptor of a 128-byte-swizzled operand: rows of
// 128 bytes (64 bf16/f16), whose 16-byte chunk c sits at c ^ (row % 8), in
// 1024-byte atoms of 8 rows. `lbo` (bytes) steps between 64-column panels
// of an MN-major operand; `sbo` (bytes) between 8-row groups.
__device__ __forceinline__ std::uint64_t desc_sw128(std::uint32_t smem_addr, std::uint32_t lbo,
                                                    std::uint32_t sbo) {
  std::uint64_t d = (smem_addr & 0x3FFFFu) >> 4;
  d |= std::uint64_t((lbo & 0x3FFFFu) >> 4) << 16;
  d |= std::uint64_t((sbo & 0x3FFFFu) >> 4) << 32;
  d |= std::uint64_t(1) << 62;  // layout: 128-byte swizzle
  return d;
}

__device__ __forceinline__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Makes the compiler treat the registers as written here, so that no read
// of an accumulator moves above the wait that completes it.
template <int N>
__device__ __forceinline__ void touch_regs(float* d) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Orders this thread's generic-proxy shared-memory writes (cp.async, st.shared)
// before the async proxy (wgmma) reads them; a barrier must follow.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace strata::cuda::wgmma
