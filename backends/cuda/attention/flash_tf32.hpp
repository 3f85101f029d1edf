#pragma once
// Host entry point of the f32 TF32 tensor-core attention kernel
// (flash_tf32_launch.cu), free of CUDA headers so that register.cpp stays
// plain C++.
namespace strata {
class Registry;
namespace cuda {

// Registers softmax_attention for f32 on "cuda" ahead of the exact FFMA
// kernels (cuda.attention.streaming), which keep every call these decline:
// "cuda.attention.mma_tf32x3_d64" / "..._d128" for precision high and
// "cuda.attention.mma_tf32_d64" / "..._d128" for medium (d, dv <= 64 and
// <= 128), each only for its own precision. Head dims over 128 and
// decode-like calls too small to fill the GPU run highest.
void register_cuda_flash_tf32(Registry& r);

}  // namespace cuda
}  // namespace strata
