#pragma once
// Where one CTA of the flash attention kernels (sm80/kernel_16bit.cuh,
// sm80/kernel_tf32.cuh, sm90/kernel_16bit.cuh, sm90/kernel_tf32.cuh) works:
// its tile of query rows, its (batch, head), and the heads of q, k and v it
// reads. One copy for the four kernels, so that they agree on the block
// order.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/common/flash_args.hpp"

namespace strata::cuda::flash {

// Element offset of flat batch index b (over B..., row-major) in an operand
// whose batch dims have strides bs.
__device__ __forceinline__ std::int64_t batch_off(const FlashArgs& a, std::int64_t b,
                                                  const std::int64_t* bs) {
  std::int64_t off = 0;
  for (int i = a.batch_rank - 1; i >= 0; --i) {
    const std::int64_t n = a.batch_shape[i];
    off += (b % n) * bs[i];
    b /= n;
  }
  return off;
}

// The tile of rows (mt) and the (batch, head) index (bh) of block `bid`
// (split index already divided out). Without a band, and with lpt_heads 0,
// the row tiles of one (batch, head) are neighbours in the grid so that their
// CTAs share K and V in L2, the heaviest (last) tiles of a band first. Under
// a band with lpt_heads = g, heads go in chunks of g and, within a chunk, all
// heads' heaviest row tiles before any lighter one: the grid's last blocks
// are the lightest anywhere, so no SM ends the call alone on a long tile
// (docs/log/cuda-tuning.md, "Causal block order"); g heads' K and V stay in L2.
__device__ __forceinline__ void flash_block_tile(const FlashArgs& a, std::int64_t bid,
                                                 std::int64_t& mt, std::int64_t& bh) {
  if (a.has_band && a.lpt_heads > 0) {
    const std::int64_t g = a.lpt_heads < a.bh_count ? a.lpt_heads : a.bh_count;
    const std::int64_t chunk = bid / (g * a.m_tiles), r = bid - chunk * g * a.m_tiles;
    const std::int64_t left = a.bh_count - chunk * g, gc = left < g ? left : g;
    mt = a.m_tiles - 1 - r / gc;
    bh = chunk * g + r % gc;
    return;
  }
  mt = bid % a.m_tiles;
  bh = bid / a.m_tiles;
  if (a.has_band) mt = a.m_tiles - 1 - mt;
}

// One CTA's rows and heads; T: the element type of q, k and v.
template <class T>
struct FlashTile {
  std::int64_t bh;     // (batch, q head) index, B... * Hq of them
  std::int64_t b, h;   // batch index and q head
  std::int64_t m0;     // the tile's first row
  int rows;            // the tile's rows below M
  const T *q, *k, *v;  // q at row m0 of head h; k and v of head h / group
};

// The tile of BM rows of block `bid` (split index already divided out).
template <class T, int BM>
__device__ __forceinline__ FlashTile<T> flash_tile(const FlashArgs& a, std::int64_t bid) {
  std::int64_t mt = 0, bh = 0;
  flash_block_tile(a, bid, mt, bh);
  const std::int64_t b = bh / a.Hq, h = bh % a.Hq, hk = h / a.group;
  const std::int64_t m0 = mt * BM;
  const int rows = a.M - m0 < BM ? int(a.M - m0) : BM;
  const T* q = static_cast<const T*>(a.q) + batch_off(a, b, a.q_bs) + h * a.q_hs + m0 * a.q_ms;
  const T* k = static_cast<const T*>(a.k) + batch_off(a, b, a.k_bs) + hk * a.k_hs;
  const T* v = static_cast<const T*>(a.v) + batch_off(a, b, a.v_bs) + hk * a.v_hs;
  return {bh, b, h, m0, rows, q, k, v};
}

// The tiles of BN keys that rows [m0, m0 + rows) can keep, [begin, end):
// every key without a band, else those of the rows' band (empty when it
// holds no key). One rule for the four kernels' key loops.
struct KeyTiles {
  std::int64_t begin, end;
};
template <int BN>
__device__ __forceinline__ KeyTiles band_key_tiles(const FlashArgs& a, std::int64_t m0, int rows) {
  std::int64_t kv_lo = 0, kv_hi = a.N;  // [kv_lo, kv_hi)
  if (a.has_band) {
    const std::int64_t lo = m0 + a.band_lo, hi = m0 + rows + a.band_hi;
    kv_lo = lo > kv_lo ? lo : kv_lo;
    kv_hi = hi < kv_hi ? hi : kv_hi;
  }
  const std::int64_t begin = kv_lo / BN;
  return {begin, kv_lo < kv_hi ? (kv_hi + BN - 1) / BN : begin};
}

}  // namespace strata::cuda::flash
