#pragma once
// wgmma.m64n40k16 (bf16, f16) with A in registers and B MN-major: the P V
// of panel 1 in the d 128 configurations whose P V covers 104 columns
// (flash_wgmma.cuh, NV = 104: one N = 64 on panel 0, one N = 40 on panel 1).
// Written by scripts/gen_wgmma_ops.py's wrapper(40, ...) (rs form only);
// its place is wgmma_ops.cuh once 40 joins the script's SHAPES.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/attention/wgmma_ops.cuh"

namespace strata::cuda::wgmma {

template <>
struct Wgmma<40, __nv_bfloat16> {
  // d[64 x 40] (+)= A[64 x 16] B[16 x 40]; A in registers (per warp the
  // mma.sync m16n8k16 A fragment), B MN-major (transposed) in shared memory.
  __device__ static void rs(float* d, const std::uint32_t* a, std::uint64_t db, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %25, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n40k16.f32.bf16.bf16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19}, "
        "{%20,%21,%22,%23}, %24, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
  }
};

template <>
struct Wgmma<40, __half> {
  // d[64 x 40] (+)= A[64 x 16] B[16 x 40]; A in registers (per warp the
  // mma.sync m16n8k16 A fragment), B MN-major (transposed) in shared memory.
  __device__ static void rs(float* d, const std::uint32_t* a, std::uint64_t db, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %25, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n40k16.f32.f16.f16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19}, "
        "{%20,%21,%22,%23}, %24, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
  }
};

}  // namespace strata::cuda::wgmma
