#pragma once
// Builds the Variant entries of the streaming kernels (tiled, pipelined, f64
// DMMA) from their configurations; only the variant .cu files include this:
// it instantiates the kernels.
#include "cuda/attention/dispatch/streaming_variants.hpp"
#include "cuda/attention/ffma/dmma.cuh"
#include "cuda/attention/ffma/pipelined.cuh"
#include "cuda/attention/ffma/tiled.cuh"

namespace strata::cuda {

// Launches kernel K (one instance per configuration C) with PDL and C's
// block size: the launcher of the streaming variants (their splits are
// merged by a separate kernel, so merge_count is not theirs).
template <class C, void (*K)(AttnParams)>
void launch_variant(const AttnParams& p, unsigned* /*merge_count*/, int grid, std::size_t smem,
                    cudaStream_t st) {
  (void)launch_pdl(K, grid, C::NT, smem, st, p);
}

// The entry of streaming kernel K for configuration C.
template <class C, void (*K)(AttnParams)>
Variant streaming_variant(const char* name, DType dtype, std::int64_t max_d, std::int64_t max_dv,
                          int bm, int bn, int dv_tile) {
  return variant_of<C>(name, dtype, false, max_d, max_dv, bm, bn, dv_tile,
                       reinterpret_cast<const void*>(K), &launch_variant<C, K>);
}

// Tiled kernel (f32, f64): serves d <= max_d and dv <= max_dv (0: any).
template <class C>
Variant tiled(const char* name, std::int64_t max_d, std::int64_t max_dv) {
  return streaming_variant<C, attn_tiled_kernel<C>>(name, dtype_of_v<typename C::type>, max_d,
                                                    max_dv, C::BM, C::BN, C::DV);
}

// Pipelined kernel (f32): serves d <= DK and dv <= DV only.
template <class C>
Variant pipe(const char* name) {
  Variant v = streaming_variant<C, attn_pipe_kernel<C>>(name, DType::f32, C::DK, C::DV, C::BM,
                                                        C::BN, C::DV);
  v.packs_kv = true;
  return v;
}

// f64 tensor-core kernel: serves d <= DK and dv <= DV only.
template <class C>
Variant dmma(const char* name) {
  return streaming_variant<C, attn_dmma_kernel<C>>(name, DType::f64, C::DK, C::DV, C::BM, C::BN,
                                                   C::DV);
}

}  // namespace strata::cuda
