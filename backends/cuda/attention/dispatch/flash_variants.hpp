#pragma once
// The compiled configurations of the tensor-core attention kernels that the
// launchers choose from: bf16/f16 (sm80/kernel_16bit.cuh on mma.sync,
// sm90/kernel_16bit.cuh on wgmma; launch_16bit.cu) and f32 in TF32
// (sm80/kernel_tf32.cuh, sm90/kernel_tf32.cuh; launch_tf32.cu). Each table
// compiles in a file of its own (sm80/table_*.cu, sm90/table_*.cu), in
// parallel.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "cuda/attention/common/flash_args.hpp"
#include "strata/dtype.hpp"

namespace strata::cuda {

// The configurations' flags, named where the tables pass them (sm80 and
// sm90 configs_*.cuh): precision high (3xTF32: each operand split into a
// big and a small TF32 part) or medium (TF32), and whether the mma.sync
// kernels hold Q's fragments in registers for the whole key loop or read
// them from shared memory at each k-step.
inline constexpr bool kTf32x3 = true, kTf32 = false;
inline constexpr bool kQInRegisters = true, kQInShared = false;

struct FlashVariant {
  const char* name;  // e.g. "mma.d128.64x64.2_stages"
  DType dtype;
  int D;             // head dim the kernel is compiled for (d and dv <= D)
  int bm, bn;        // query rows per CTA, keys per tile
  int threads;       // bm / 16 warps
  std::size_t smem;  // dynamic shared memory bytes
  // Chosen without STRATA_FLASH_VARIANT; false for the candidates kept for
  // tuning (backends/cuda/lab/attention), which run only when it names them.
  bool is_default;
  const void* kernel;
  void (*launch)(const FlashArgs&, int grid, std::size_t smem, cudaStream_t);
  // Chosen instead of the default when the default's grid would leave
  // multiprocessors idle (fewer CTAs than SMs): smaller query tiles.
  bool small_grid = false;
  // Reads q, k and v rows in 8-byte pieces: taken (instead of packing them)
  // when their rows are only 8-byte aligned, e.g. d = 100.
  bool pieces8 = false;
  // The q/k head dim S = Q K^T covers: D, or fewer columns for the wgmma
  // configurations that skip S's zero-padded k-steps (KQ in
  // sm90/kernel_16bit.cuh).
  int qk_cols = 0;  // 0: D
  // Splits the keys of a tile of rows over several CTAs when the grid is
  // too small to fill the GPU (FlashArgs::splits; the wgmma kernel).
  bool splits_keys = false;
};

// A default entry (is_default) of head dim D: bm query rows and bn keys per
// CTA, `threads` threads, smem bytes of dynamic shared memory, the kernel
// and the launcher that starts it; the make_*_variant of each
// configs_*.cuh set the flags beyond these.
template <class Kernel>
FlashVariant default_variant(const char* name, DType dt, int D, int bm, int bn, int threads,
                             std::size_t smem, Kernel* kernel,
                             void (*launch)(const FlashArgs&, int, std::size_t, cudaStream_t)) {
  // The fields in their order, is_default true.
  return FlashVariant{
      name, dt, D, bm, bn, threads, smem, true, reinterpret_cast<const void*>(kernel), launch};
}

// ---- bf16 / f16 ----

// A candidate kept for tuning: in the tables only in a tuning build
// (backends/cuda/lab/attention) and chosen only by STRATA_FLASH_VARIANT.
inline FlashVariant candidate(FlashVariant v) {
  v.is_default = false;
  return v;
}

// Every table holds defaults only; a tuning build appends the lab's
// candidates (backends/cuda/lab/attention/candidates.hpp).

const std::vector<FlashVariant>& flash_variants_bf16();
const std::vector<FlashVariant>& flash_variants_f16();

// The wgmma configurations whose P V covers fewer value columns than their
// head dim (NV in sm90/kernel_16bit.cuh, wgmma_narrow_v_configs in
// sm90/configs_16bit.cuh): FlashVariant has no field for the value columns,
// so a call reaches them only through these tables, which the launcher
// uses for calls with dv <= kWgmmaNarrowV. Value columns of the narrow
// configurations: d 97-104 (d 100's rows padded to a multiple of 8).
inline constexpr int kWgmmaNarrowV = 104;
// The wgmma kernel's tables for T (__nv_bfloat16 or __half; sm_90a
// builds, empty otherwise), built on first use: every configuration (all),
// and the narrow ones first, then every one of all (narrow_v).
// sm90/configs_16bit.cuh defines it, sm90/table_bf16.cu and table_f16.cu
// compile it for their type, in parallel.
struct WgmmaTables {
  std::vector<FlashVariant> all, narrow_v;
};
template <class T>
const WgmmaTables& wgmma_tables();

// ---- f32 in TF32: one table per precision (entries have dtype f32) ----

const std::vector<FlashVariant>& flash_variants_tf32x3();  // high: 3xTF32
const std::vector<FlashVariant>& flash_variants_tf32();    // medium: TF32
// The wgmma kernel's (the defaults on sm_90a, empty otherwise).
const std::vector<FlashVariant>& wgmma_variants_tf32x3();
const std::vector<FlashVariant>& wgmma_variants_tf32();

}  // namespace strata::cuda
