#pragma once
// The by-value argument of the bf16/f16 tensor-core attention kernel
// (sm80/kernel_16bit.cuh). Built once per call by the launcher (dispatch/launch_16bit.cu,
// make_flash_args: the only place that reads AttentionArgs), so the kernel
// does not change when the front end's struct does.
//
//   q [B..., Hq, M, d]  k, v [B..., Hkv, N, d|dv]  out [B..., Hq, M, dv]
//   lse [B..., Hq, M] (f32, optional)  mask [B..., Hq, M, N] (optional)
//
// Strides are in elements. q, k and v have a unit last-dim stride and
// 16-byte aligned rows whose length is padded with zeros to a multiple of 8
// (the launcher packs other layouts into scratch first), or for a kernel
// built to read 8-byte pieces (FlashVariant::pieces8), 8-byte aligned rows
// of a multiple of 4; out, lse and mask may have any strides.
#include <cstdint>

namespace strata::cuda {

inline constexpr int kFlashMaxBatchDims = 5;

struct FlashArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  float* lse = nullptr;
  const void* mask = nullptr;
  int mask_kind = 0;  // 0 none, 1 bool (true = keep), 2 additive in q's dtype

  int batch_rank = 0;
  std::int64_t batch_shape[kFlashMaxBatchDims] = {};
  std::int64_t q_bs[kFlashMaxBatchDims] = {}, k_bs[kFlashMaxBatchDims] = {},
               v_bs[kFlashMaxBatchDims] = {}, o_bs[kFlashMaxBatchDims] = {},
               l_bs[kFlashMaxBatchDims] = {}, mk_bs[kFlashMaxBatchDims] = {};
  std::int64_t q_hs = 0, q_ms = 0;
  std::int64_t k_hs = 0, k_ns = 0;
  std::int64_t v_hs = 0, v_ns = 0;
  std::int64_t o_hs = 0, o_ms = 0, o_ds = 1;
  std::int64_t l_hs = 0, l_ms = 0;
  std::int64_t mk_hs = 0, mk_ms = 0, mk_ns = 0;

  std::int64_t Hq = 1, group = 1;  // group = Hq / Hkv
  std::int64_t M = 0, N = 0;
  int d = 0, dv = 0;  // at most the kernel's D

  // Band: row i keeps key j when i + band_lo <= j <= i + band_hi.
  std::int64_t band_lo = 0, band_hi = 0;
  bool has_band = false;

  float scale_log2 = 0;  // scale * log2(e)
  std::int64_t m_tiles = 1;
  // Block order under a band (flash_block_tile): 0 keeps a (batch, head)'s
  // row tiles neighbours; g > 0 walks heads in chunks of g, heaviest row
  // tiles of the whole chunk first (longest-first scheduling). bh_count =
  // B... * Hq.
  std::int64_t bh_count = 1;
  int lpt_heads = 0;
  bool o_vec = false;  // 16-byte stores of out rows are safe
  // The wgmma d 64 64x128 kernel computes a last key tile whose upper half
  // is masked for all its rows over its first half only
  // (STRATA_FLASH_DIAG_HALF, sm90/kernel_16bit.cuh). Sits in o_vec's padding:
  // the struct, and so every other kernel's parameter, keeps its size.
  bool diag_half = false;

  // Split-KV (the wgmma kernel): each tile of rows takes its key tiles in
  // `splits` parts, one CTA each, which write their unnormalised partials,
  // acc [splits][B... * Hq][M][dv] and (m, l) [splits][B... * Hq][M][2] (m
  // in base 2), for the merge kernel (common/split_merge.cuh) instead of out
  // and lse. splits = 1: no partials, out and lse written directly.
  int splits = 1;
  std::int64_t part_rows = 0;  // B... * Hq * M: the partial rows of one split
  float* part_acc = nullptr;
  float* part_ml = nullptr;
};

}  // namespace strata::cuda
