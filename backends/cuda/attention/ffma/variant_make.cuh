#pragma once
// Builds Variant entries from kernel configurations (only the variant .cu
// files include this: it instantiates the kernels).
#include "cuda/attention/attention_decode.cuh"
#include "cuda/attention/attention_decode_bulk.cuh"
#include "cuda/attention/attention_dmma.cuh"
#include "cuda/attention/attention_pipelined.cuh"
#include "cuda/attention/attention_tiled.cuh"
#include "cuda/attention/attention_variants.hpp"

namespace strata::cuda {

// Launches kernel K (one instance per configuration C) with PDL and C's
// block size: the launcher of the streaming variants (their splits are
// merged by a separate kernel, so merge_count is not theirs).
template <class C, void (*K)(AttnParams)>
void launch_variant(const AttnParams& p, unsigned* /*merge_count*/, int grid, std::size_t smem,
                    cudaStream_t st) {
  (void)launch_pdl(K, grid, C::NT, smem, st, p);
}

// The decode kernel's launcher: it merges its own splits given the ticket
// counters.
template <class C>
void launch_decode(const AttnParams& p, unsigned* merge_count, int grid, std::size_t smem,
                   cudaStream_t st) {
  (void)launch_pdl(attn_decode_kernel<C>, grid, C::NT, smem, st, p, merge_count);
}

// The Variant entry of configuration C's kernel (launched by `launch`): the
// fields every kernel family sets the same way (threads, shared memory).
template <class C>
Variant variant_of(const char* name, DType dtype, bool decode, bool dflt, std::int64_t max_d,
                   std::int64_t max_dv, int bm, int bn, int dv_tile, const void* kernel,
                   LaunchFn launch) {
  return Variant{name, dtype,   decode, dflt,          max_d,  max_dv, bm,
                 bn,   dv_tile, C::NT,  C::smem_bytes, kernel, launch};
}
template <class C, void (*K)(AttnParams)>
Variant variant_of(const char* name, DType dtype, bool decode, bool dflt, std::int64_t max_d,
                   std::int64_t max_dv, int bm, int bn, int dv_tile) {
  return variant_of<C>(name, dtype, decode, dflt, max_d, max_dv, bm, bn, dv_tile,
                       reinterpret_cast<const void*>(K), &launch_variant<C, K>);
}

template <class C>
Variant tiled(const char* name, bool dflt, std::int64_t max_d, std::int64_t max_dv) {
  return variant_of<C, attn_tiled_kernel<C>>(name, dtype_of_v<typename C::type>, false, dflt, max_d,
                                             max_dv, C::BM, C::BN, C::DV);
}

// Pipelined kernel (f32): serves d <= DK and dv <= DV only.
template <class C>
Variant pipe(const char* name, bool dflt) {
  Variant v = variant_of<C, attn_pipe_kernel<C>>(name, DType::f32, false, dflt, C::DK, C::DV, C::BM,
                                                 C::BN, C::DV);
  v.packs_kv = true;
  return v;
}

// f64 tensor-core kernel: serves d <= DK and dv <= DV only.
template <class C>
Variant dmma(const char* name, bool dflt) {
  return variant_of<C, attn_dmma_kernel<C>>(name, DType::f64, false, dflt, C::DK, C::DV, C::BM,
                                            C::BN, C::DV);
}

// Decode kernel: registered under its storage dtype (bf16/f16 beside the
// f32 compute type, else the compute type itself).
template <class C>
Variant decode(const char* name, bool dflt = true) {
  return variant_of<C>(name, StorageDType<typename C::storage>::value, true, dflt, C::max_d,
                       C::max_dv, 1, C::WARPS * C::U, C::max_dv,
                       reinterpret_cast<const void*>(&attn_decode_kernel<C>), &launch_decode<C>);
}

// The bulk-copy decode kernel (attention_decode_bulk.cuh): blocks_per_sm
// caps the plan's resident blocks per SM (each keeps its ring of STAGES
// slots in flight); it merges any number of splits itself.
template <class C>
void launch_decode_bulk(const AttnParams& p, unsigned* merge_count, int grid, std::size_t smem,
                        cudaStream_t st) {
  (void)launch_pdl(attn_decode_bulk_kernel<C>, grid, C::NT, smem, st, p, merge_count);
}
template <class C>
Variant decode_bulk(const char* name, int blocks_per_sm, bool dflt = false) {
  Variant v =
      variant_of<C>(name, StorageDType<typename C::storage>::value, true, dflt, C::max_d, C::max_dv,
                    1, C::KS, C::max_dv, reinterpret_cast<const void*>(&attn_decode_bulk_kernel<C>),
                    &launch_decode_bulk<C>);
  v.decode_blocks_per_sm = blocks_per_sm;
  v.merges_any_splits = true;
  return v;
}

// Restricts a variant to calls of at most `work` scores (batch x heads x M x
// N); among defaults of the same head-dim reach, such a variant is preferred
// where it serves.
inline Variant for_small(Variant v, std::int64_t work) {
  v.max_work = work;
  return v;
}

}  // namespace strata::cuda
