#pragma once
// Host entry points of the cuda backend's softmax_attention kernels, free of
// CUDA headers so that register.cpp compiles as plain C++. Arguments come
// validated from the front end, with device pointers.
#include <string>

#include "strata/attention_args.hpp"

namespace strata {
class Registry;
namespace cuda {

// ---- f32 and f64 streaming kernels, bf16/f16 decode (launch_streaming.cu) ----

void attention_f32(const AttentionArgs& a);
void attention_f64(const AttentionArgs& a);
// bf16 / f16 with M <= 8: the split-KV decode kernel on the narrow inputs
// (f32 arithmetic, lse f32, out rounded once). attention_decode_supports
// says "" when it serves `a` (bf16/f16, M <= 8, d and dv <= 256).
void attention_bf16_decode(const AttentionArgs& a);
void attention_f16_decode(const AttentionArgs& a);
const char* attention_decode_supports(const AttentionArgs& a);
// "" when the cuda kernels can run `a`, else the reason.
const char* attention_supports(const AttentionArgs& a);
// Kernel variant the launcher would pick (for docs/bench labels); bf16/f16
// only for calls attention_decode_supports accepts.
std::string attention_plan(const AttentionArgs& a);

// ---- bf16/f16 on the tensor cores (launch_16bit.cu) ----

// Registers softmax_attention for bf16 and f16 on "cuda", in this order:
// "cuda.attention.decode_<dt>" (M <= 8 query rows, d, dv <= 256: the
// split-KV decode kernel on the narrow inputs, launch_streaming.cu), the
// wgmma routes "cuda.attention.wgmma_<dt>_d64" and "..._d128" (sm_90a
// builds), the mma.sync ones "cuda.attention.mma_<dt>_d64" (d, dv <= 64) and
// "..._d128" (<= 128), "cuda.attention.wgmma_<dt>_d256" (<= 256, sm_90a),
// and "cuda.attention.mma_<dt>_via_f32" for larger head dims and for
// decode-like calls too small to fill the GPU (the inputs are converted to
// f32 on the device and the f32 kernel, which splits the keys, runs).
void register_cuda_flash_mma(Registry& r);

// ---- f32 on the tensor cores, TF32 and 3xTF32 (launch_tf32.cu) ----

// Registers softmax_attention for f32 on "cuda" ahead of the exact FFMA
// kernels (cuda.attention.streaming), which keep every call these decline:
// "cuda.attention.mma_tf32x3_d64" / "..._d128" for precision high and
// "cuda.attention.mma_tf32_d64" / "..._d128" for medium (d, dv <= 64 and
// <= 128), each only for its own precision. Head dims over 128 and
// decode-like calls too small to fill the GPU run highest.
void register_cuda_flash_tf32(Registry& r);

// ---- the backward (attention/backward/launch.cu) ----

// Registers softmax_attention_backward on "cuda" for f32, f64 (FFMA:
// "cuda.attention_backward.ffma") and bf16, f16 ("..._mma_<dt>": the
// tensor cores for head dims up to 128, FFMA beyond).
void register_cuda_attention_backward(Registry& r);

}  // namespace cuda
}  // namespace strata
