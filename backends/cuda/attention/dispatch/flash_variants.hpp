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
// The wgmma kernel's (sm_90a builds; empty otherwise).
const std::vector<FlashVariant>& wgmma_variants_bf16();
const std::vector<FlashVariant>& wgmma_variants_f16();

// The wgmma configurations whose P V covers fewer value columns than their
// head dim (NV in sm90/kernel_16bit.cuh, wgmma_narrow_v_configs in
// sm90/configs_16bit.cuh): FlashVariant has no field for the value columns,
// so a call reaches them only through these tables, which the launcher
// uses for calls with dv <= kWgmmaNarrowV. Value columns of the narrow
// configurations: d 97-104 (d 100's rows padded to a multiple of 8).
inline constexpr int kWgmmaNarrowV = 104;
// The narrow configurations first, then every one of wgmma_variants_<dt>().
const std::vector<FlashVariant>& wgmma_variants_narrow_v_bf16();
const std::vector<FlashVariant>& wgmma_variants_narrow_v_f16();

// ---- f32 in TF32: one table per precision (entries have dtype f32) ----

const std::vector<FlashVariant>& flash_variants_tf32x3();  // high: 3xTF32
const std::vector<FlashVariant>& flash_variants_tf32();    // medium: TF32
// The wgmma kernel's (the defaults on sm_90a, empty otherwise).
const std::vector<FlashVariant>& wgmma_variants_tf32x3();
const std::vector<FlashVariant>& wgmma_variants_tf32();

}  // namespace strata::cuda
