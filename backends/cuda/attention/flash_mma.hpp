#pragma once
// Host entry points of the bf16/f16 tensor-core attention kernel
// (flash_mma_launch.cu), free of CUDA headers so that register.cpp stays
// plain C++.
namespace strata {
class Registry;
namespace cuda {

// Registers softmax_attention for bf16 and f16 on "cuda", in this order:
// "cuda.attention.decode_<dt>" (M <= 8 query rows, d, dv <= 256: the
// split-KV decode kernel on the narrow inputs, attention_launch.cu),
// "cuda.attention.mma_<dt>_d64" (d, dv <= 64), "..._d128" (<= 128), and
// "cuda.attention.mma_<dt>_via_f32" for larger head dims and for decode-like
// calls too small to fill the GPU (the inputs are converted to f32 on the
// device and the f32 kernel, which splits the keys, runs).
void register_cuda_flash_mma(Registry& r);

}  // namespace cuda
}  // namespace strata
