#pragma once
// Builds Variant entries from kernel configurations (only the variant .cu
// files include this: it instantiates the kernels).
#include "cuda/attention_decode.cuh"
#include "cuda/attention_dmma.cuh"
#include "cuda/attention_pipelined.cuh"
#include "cuda/attention_tiled.cuh"
#include "cuda/attention_variants.hpp"

namespace strata::cuda {

template <class C>
void launch_tiled(const AttnParams& p, int grid, std::size_t smem, cudaStream_t st) {
  (void)launch_pdl(attn_tiled_kernel<C>, grid, C::NT, smem, st, p);
}
template <class C>
void launch_decode(const AttnParams& p, int grid, std::size_t smem, cudaStream_t st) {
  (void)launch_pdl(attn_decode_kernel<C>, grid, C::NT, smem, st, p);
}

template <class C>
Variant tiled(const char* name, bool dflt, std::int64_t max_d, std::int64_t max_dv) {
  using T = typename C::type;
  return Variant{name,
                 dtype_of_v<T>,
                 false,
                 dflt,
                 max_d,
                 max_dv,
                 C::BM,
                 C::BN,
                 C::DV,
                 C::NT,
                 C::smem_bytes,
                 reinterpret_cast<const void*>(&attn_tiled_kernel<C>),
                 &launch_tiled<C>};
}

template <class C>
void launch_pipe(const AttnParams& p, int grid, std::size_t smem, cudaStream_t st) {
  (void)launch_pdl(attn_pipe_kernel<C>, grid, C::NT, smem, st, p);
}

// Pipelined kernel (f32): serves d <= DK and dv <= DV only.
template <class C>
Variant pipe(const char* name, bool dflt) {
  Variant v{name,           DType::f32,    false,
            dflt,           C::DK,         C::DV,
            C::BM,          C::BN,         C::DV,
            C::NT,          C::smem_bytes, reinterpret_cast<const void*>(&attn_pipe_kernel<C>),
            &launch_pipe<C>};
  v.packs_kv = true;
  return v;
}

template <class C>
void launch_dmma(const AttnParams& p, int grid, std::size_t smem, cudaStream_t st) {
  (void)launch_pdl(attn_dmma_kernel<C>, grid, C::NT, smem, st, p);
}

// f64 tensor-core kernel: serves d <= DK and dv <= DV only.
template <class C>
Variant dmma(const char* name, bool dflt) {
  return Variant{name,           DType::f64,    false,
                 dflt,           C::DK,         C::DV,
                 C::BM,          C::BN,         C::DV,
                 C::NT,          C::smem_bytes, reinterpret_cast<const void*>(&attn_dmma_kernel<C>),
                 &launch_dmma<C>};
}

template <class C>
Variant decode(const char* name, bool dflt = true) {
  using T = typename C::type;
  return Variant{name,
                 dtype_of_v<T>,
                 true,
                 dflt,
                 C::max_d,
                 C::max_dv,
                 1,
                 C::WARPS * C::U,
                 C::max_dv,
                 C::NT,
                 C::smem_bytes,
                 reinterpret_cast<const void*>(&attn_decode_kernel<C>),
                 &launch_decode<C>};
}

// Restricts a variant to calls of at most `work` scores (batch x heads x M x
// N); among defaults of the same head-dim reach, such a variant is preferred
// where it serves.
inline Variant for_small(Variant v, std::int64_t work) {
  v.max_work = work;
  return v;
}

}  // namespace strata::cuda
