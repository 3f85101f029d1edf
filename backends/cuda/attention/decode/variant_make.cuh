#pragma once
// Builds the Variant entries of the decode kernels (decode/kernel.cuh,
// decode/bulk_kernel.cuh) from their configurations; only the variant .cu
// files (decode/variants_16bit.cu; ffma/variants_f32.cu and
// ffma/variants_f64.cu, whose tables start with their dtype's decode
// variants) include this: it instantiates the kernels.
#include "cuda/attention/decode/bulk_kernel.cuh"
#include "cuda/attention/decode/kernel.cuh"
#include "cuda/attention/dispatch/streaming_variants.hpp"

namespace strata::cuda {

// The decode kernel's launcher: it merges its own splits given the ticket
// counters.
template <class C>
void launch_decode(const AttnParams& p, unsigned* merge_count, int grid, std::size_t smem,
                   cudaStream_t st) {
  (void)launch_pdl(attn_decode_kernel<C>, grid, C::NT, smem, st, p, merge_count);
}

// Decode kernel: registered under its storage dtype (bf16/f16 beside the
// f32 compute type, else the compute type itself).
template <class C>
Variant decode(const char* name) {
  return variant_of<C>(name, StorageDType<typename C::storage>::value, true, C::max_d, C::max_dv, 1,
                       C::WARPS * C::U, C::max_dv,
                       reinterpret_cast<const void*>(&attn_decode_kernel<C>), &launch_decode<C>);
}

// The bulk-copy decode kernel (decode/bulk_kernel.cuh): blocks_per_sm
// caps the plan's resident blocks per SM (each keeps its ring of STAGES
// slots in flight); it merges any number of splits itself.
template <class C>
void launch_decode_bulk(const AttnParams& p, unsigned* merge_count, int grid, std::size_t smem,
                        cudaStream_t st) {
  (void)launch_pdl(attn_decode_bulk_kernel<C>, grid, C::NT, smem, st, p, merge_count);
}
template <class C>
Variant decode_bulk(const char* name, int blocks_per_sm) {
  Variant v =
      variant_of<C>(name, StorageDType<typename C::storage>::value, true, C::max_d, C::max_dv, 1,
                    C::KS, C::max_dv, reinterpret_cast<const void*>(&attn_decode_bulk_kernel<C>),
                    &launch_decode_bulk<C>);
  v.decode_blocks_per_sm = blocks_per_sm;
  v.merges_any_splits = true;
  return v;
}

}  // namespace strata::cuda
