#pragma once
// mma.sync m16n8k16 with f32 accumulation for bf16 and f16 operands:
// c += A B on one warp's fragments (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"): A row-major 16 x 16 in four b32
// registers, B column-major 16 x 8 in two, C 16 x 8 in four f32. Shared by
// the mma.sync attention kernels (attention/flash_mma.cuh) and the 9-16 row
// matrix-vector kernel (matmul/gemv16_mma.cuh).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace strata::cuda {

// The operand type is part of the instruction's name: one asm statement per
// type, the operands the same.
template <class T>
struct MmaSync {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>,
                "mma.sync takes bf16 or f16 operands");
  __device__ static void run(float* c, std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                             std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
};

}  // namespace strata::cuda
