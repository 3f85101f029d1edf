#pragma once
// Device primitives of the flash attention kernels (sm80/kernel_16bit.cuh,
// sm80/kernel_tf32.cuh, sm90/kernel_16bit.cuh, sm90/kernel_tf32.cuh): the
// bf16/f16 operand packing and mma.sync, shared-memory addresses, cp.async,
// ldmatrix, exp2, the XOR swizzle of 16-byte chunks and the TF32 operand
// split.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/mma_sync.cuh"

namespace strata::cuda::flash {

// bf16 or f16 operands: packing two floats into one b32 register, widening
// one element, and mma.sync on a fragment of A.
template <class T>
struct MmaType {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>,
                "bf16 or f16 operands");
  __device__ static std::uint32_t pack(float lo, float hi) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
      return *reinterpret_cast<std::uint32_t*>(&h);
    } else {
      __half2 h = __floats2half2_rn(lo, hi);
      return *reinterpret_cast<std::uint32_t*>(&h);
    }
  }
  __device__ static float to_float(T x) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
      return __bfloat162float(x);
    else
      return __half2float(x);
  }
  __device__ static void mma(float* c, const std::uint32_t* a, std::uint32_t b0, std::uint32_t b1) {
    MmaSync<T>::run(c, a[0], a[1], a[2], a[3], b0, b1);
  }
};

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1; src_bytes = 0 writes zeros.
__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4(std::uint32_t* r, std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(std::uint32_t* r, std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Element offset of 16-byte chunk `c` of row `r` in a [rows][D] tile: the
// chunk index is XORed with the row's low 3 bits, so the 8 rows one
// ldmatrix phase reads land in 8 different 16-byte bank groups.
template <int D>
__device__ __forceinline__ int swz(int r, int c) {
  return r * D + ((c ^ (r & 7)) << 3);
}

// Nearest TF32 (ties away from zero), as a 32-bit pattern with the low 13
// mantissa bits zero.
__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// The TF32 operand(s) of one f32 value: big alone (medium) or big and small.
template <bool X3>
struct Tf32 {
  std::uint32_t big, small;
  __device__ __forceinline__ void set(float x) {
    big = to_tf32(x);
    if constexpr (X3) small = to_tf32(x - __uint_as_float(big));
  }
  __device__ __forceinline__ void set_bits(std::uint32_t x) { set(__uint_as_float(x)); }
};

}  // namespace strata::cuda::flash
