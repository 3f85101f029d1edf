#pragma once
// The copy side of the bulk-copy decode kernel (decode/bulk_kernel.cuh):
// sm_90 mbarrier and bulk-copy (cp.async.bulk) wrappers, and the producer
// warp that fills the ring of shared-memory slots with the split's K and V
// rows (decode_produce).
#include <cstdint>

#include "cuda/attention/common/streaming_params.cuh"

namespace strata::cuda {

// ---- sm_90 mbarrier and bulk-copy wrappers (shared::cta addresses) ----
// Empty below sm_90, where the kernel never takes the bulk path (the
// instructions do not exist there; unoptimised builds still emit them).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define STRATA_DECODE_BULK_ASM 1
#endif

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
#ifdef STRATA_DECODE_BULK_ASM
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
#endif
}
// Makes the initialised barriers visible to the copy engine.
__device__ __forceinline__ void mbar_fence_init() {
#ifdef STRATA_DECODE_BULK_ASM
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Release semantics: this thread's earlier reads of the slot come first.
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
#ifdef STRATA_DECODE_BULK_ASM
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
#ifdef STRATA_DECODE_BULK_ASM
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
#endif
}
// Waits for the completion of the barrier's phase of parity `parity`.
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, unsigned parity) {
#ifdef STRATA_DECODE_BULK_ASM
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra WAIT;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
#endif
}
// bytes (a multiple of 16, both addresses 16-byte aligned) from global to
// shared memory, counted against bar's expected transaction bytes.
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, unsigned bytes,
                                              std::uint64_t* bar) {
#ifdef STRATA_DECODE_BULK_ASM
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
#endif
}
#undef STRATA_DECODE_BULK_ASM

// The producer warp: copies keys [j_begin, j_end) of K (row stride ks, d
// per row) and V (vs, dv) slot after slot, KS keys a slot (fewer in the
// last), each slot once its previous keys were released.
template <class C>
__device__ __forceinline__ void decode_produce(const typename C::storage* kg,
                                               const typename C::storage* vg, std::int64_t ks,
                                               std::int64_t vs, std::int64_t d, std::int64_t dv,
                                               std::int64_t j_begin, std::int64_t j_end,
                                               typename C::storage* ring, std::uint64_t* full,
                                               std::uint64_t* empty, int lane) {
  using S = typename C::storage;
  constexpr int KS = C::KS, STAGES = C::STAGES;
  const bool kcont = ks == d, vcont = vs == dv;
  const unsigned krow = unsigned(d * sizeof(S)), vrow = unsigned(dv * sizeof(S));
  const int slots = int((j_end - j_begin + KS - 1) / KS);
  for (int st = 0; st < slots; ++st) {
    const int slot = st % STAGES;
    if (st >= STAGES) mbar_wait(empty + slot, unsigned(st / STAGES - 1) & 1u);
    const std::int64_t j0 = j_begin + std::int64_t(st) * KS;
    const int n = int(min(std::int64_t(KS), j_end - j0));
    S* const kdst = ring + slot * C::slot_elems;
    S* const vdst = kdst + KS * C::max_d;
    if (lane == 0) mbar_arrive_expect_tx(full + slot, unsigned(n) * (krow + vrow));
    __syncwarp();
    if (kcont) {
      if (lane == 0) bulk_copy_g2s(kdst, kg + j0 * ks, unsigned(n) * krow, full + slot);
    } else {
      for (int r = lane; r < n; r += 32)
        bulk_copy_g2s(kdst + r * d, kg + (j0 + r) * ks, krow, full + slot);
    }
    if (vcont) {
      if (lane == 0) bulk_copy_g2s(vdst, vg + j0 * vs, unsigned(n) * vrow, full + slot);
    } else {
      for (int r = lane; r < n; r += 32)
        bulk_copy_g2s(vdst + r * dv, vg + (j0 + r) * vs, vrow, full + slot);
    }
  }
}

}  // namespace strata::cuda
