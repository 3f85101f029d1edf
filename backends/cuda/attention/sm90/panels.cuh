#pragma once
// The shared memory of the wgmma attention kernels (sm90/kernel_16bit.cuh,
// sm90/kernel_tf32.cuh): 64-column (bf16/f16) or 32-float (f32) panels of
// 128-byte rows, 128-byte swizzled (16-byte chunk c of row r at c ^ (r % 8)),
// the layout wgmma reads; the tiles' sizes per configuration (WgmmaConfig,
// WgmmaTf32Config); and the copies that fill the panels from global memory
// (load_panels, load_panels_f32; the TF32 kernel's in-place rounding,
// round_own_chunks).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/attention/common/flash_ops.cuh"

namespace strata::cuda::flash {

// ---- bf16 / f16 ----

// 8 bytes global -> shared (cp.async.ca: .cg moves only 16); src_bytes = 0
// writes zeros.
__device__ __forceinline__ void cp_async8(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}

// Copies rows [0, rows) x columns [0, min(cols, READ)) of a [ROWS][D] tile
// from global (row stride rs elements) into D / 64 swizzled panels of ROWS
// rows of 128 bytes; the rest of the tile is zeroed. READ < D: columns no
// wgmma reads, zero-filled rather than skipped (skipping their copies took
// the d 128 kernel from 8 to 80 bytes of spill stores). A thread copies one
// 16-byte chunk column every THREADS / (D / 8) rows (a multiple of 8: one
// swizzle), as one piece, or as two 8-byte pieces when rows are only 8-byte
// aligned (pieces8: cols a multiple of 4, otherwise a multiple of 8). Where
// the D / 8 chunks do not divide the threads that way (d 192: 24 chunks, 256
// threads) the threads cover one 64-column panel after the other.
template <class T, int D, int ROWS, int THREADS, bool PIECES8, int READ = D>
__device__ __forceinline__ void load_panels(std::uint32_t dst, const T* src, std::int64_t rs,
                                            int rows, int cols, int tid) {
  constexpr bool kWhole = THREADS % (D / 8) == 0 && (THREADS / (D / 8)) % 8 == 0;
  constexpr int kChunks = kWhole ? D / 8 : 8;  // chunk columns one pass covers
  constexpr int kPasses = kWhole ? 1 : D / 64;
  constexpr int kStep = THREADS / kChunks;
  static_assert(THREADS % kChunks == 0 && kStep % 8 == 0, "a thread's rows must share one swizzle");
  static_assert(READ % 8 == 0 && READ <= D, "READ: whole 16-byte chunks of the tile");
  const int r0 = tid / kChunks;
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass) {
    const int cc = pass * 8 + tid % kChunks;
    int lim = cols;
    if constexpr (READ < D) lim = cols < READ ? cols : READ;
    const bool lo_ok = cc * 8 < lim, hi_ok = cc * 8 + 4 < lim;
    const T* p = src + r0 * rs + cc * 8;
    const std::uint32_t d0 = dst + (cc >> 3) * ROWS * 128 + r0 * 128 + (((cc & 7) ^ (r0 & 7)) << 4);
#pragma unroll
    for (int i = 0; i < (ROWS + kStep - 1) / kStep; ++i) {
      if (ROWS % kStep != 0 && r0 + i * kStep >= ROWS) break;
      const bool row_ok = r0 + i * kStep < rows;
      const std::uint32_t d = d0 + i * kStep * 128;
      if constexpr (!PIECES8) {
        const bool ok = lo_ok && row_ok;
        cp_async16(d, ok ? p : src, ok ? 16 : 0);
      } else {
        const bool ok_lo = lo_ok && row_ok, ok_hi = hi_ok && row_ok;
        cp_async8(d, ok_lo ? p : src, ok_lo ? 8 : 0);
        cp_async8(d + 8, ok_hi ? p + 4 : src, ok_hi ? 8 : 0);
      }
      p += kStep * rs;
    }
  }
}

template <class T, int D, int WG, int BN>
struct WgmmaConfig {
  static constexpr int kBM = 64 * WG;
  static constexpr int kThreads = 128 * WG;
  static constexpr int kPanels = D / 64;
  // 1024 bytes of slack: the swizzle atoms must start 1024-byte aligned.
  static constexpr int kSlots = 2;  // K and V slots each
  static constexpr std::size_t kSmem = 1024 + std::size_t(kBM + 2 * kSlots * BN) * D * sizeof(T);
};

// ---- f32 (TF32 operands) ----

// VREG: V goes global -> registers -> one transposed slot (no staging tile,
// one V^T slot instead of two: what lets high's d 128 keep two warpgroups
// in shared memory), at the price of a second barrier per tile.
template <int D, int WG, int BN, bool X3, bool VREG = false>
struct WgmmaTf32Config {
  static constexpr int kBM = 64 * WG;
  static constexpr int kThreads = 128 * WG;
  static constexpr int kParts = X3 ? 2 : 1;      // big (and small) copy of each operand
  static constexpr int kQBytes = kBM * D * 4;    // one part of Q
  static constexpr int kTileBytes = BN * D * 4;  // one part of a K or V tile
  static constexpr int kVSlots = VREG ? 1 : 2;   // V^T slots (K has two)
  // 1024 bytes of slack: the swizzle atoms must start 1024-byte aligned;
  // without VREG one raw V tile (staging for the transposed copy).
  static constexpr std::size_t kSmem =
      1024 + std::size_t(kParts) * (kQBytes + (2 + kVSlots) * std::size_t(kTileBytes)) +
      (VREG ? 0 : kTileBytes);
};

// f(byte offset, row, first column) for each 16-byte chunk (4 floats) of a
// [ROWS][D] f32 tile that thread tid owns, in the panel layout: D / 32
// panels of ROWS rows of 128 bytes, chunk c of row r at c ^ (r % 8).
template <int D, int ROWS, int THREADS, class F>
__device__ __forceinline__ void for_own_chunks(int tid, F&& f) {
  constexpr int kChunks = D / 4;
  static_assert(THREADS % kChunks == 0, "a thread copies one chunk column");
  constexpr int kStep = THREADS / kChunks;
  static_assert(ROWS % kStep == 0, "tile rows must split evenly");
  const int cc = tid % kChunks, r0 = tid / kChunks;
#pragma unroll
  for (int i = 0; i < ROWS / kStep; ++i) {
    const int r = r0 + i * kStep;
    f(std::uint32_t((cc >> 3) * ROWS * 128 + r * 128 + (((cc & 7) ^ (r & 7)) << 4)), r, cc * 4);
  }
}

// cp.async of rows [0, rows) x columns [0, cols) (cols a multiple of 4) of
// a [ROWS][D] f32 tile from global (row stride rs) into panels at dst; the
// rest is zeroed.
template <int D, int ROWS, int THREADS>
__device__ __forceinline__ void load_panels_f32(std::uint32_t dst, const float* src,
                                                std::int64_t rs, int rows, int cols, int tid) {
  constexpr int kStep = THREADS / (D / 4);
  const float* p = src + (tid / (D / 4)) * rs + (tid % (D / 4)) * 4;
  for_own_chunks<D, ROWS, THREADS>(tid, [&](std::uint32_t off, int r, int c) {
    const bool ok = r < rows && c < cols;
    cp_async16(dst + off, ok ? p : src, ok ? 16 : 0);
    p += kStep * rs;
  });
}

// The chunks this thread copied into the panels at `tile` (generic
// pointer), rounded to TF32 in place; for X3 their small parts written
// `small` bytes further. Call after this thread's cp.async wait.
template <int D, int ROWS, int THREADS, bool X3>
__device__ __forceinline__ void round_own_chunks(unsigned char* tile, int small, int tid) {
  for_own_chunks<D, ROWS, THREADS>(tid, [&](std::uint32_t off, int, int) {
    const float4 x = *reinterpret_cast<const float4*>(tile + off);
    Tf32<X3> e[4];
    e[0].set(x.x);
    e[1].set(x.y);
    e[2].set(x.z);
    e[3].set(x.w);
    *reinterpret_cast<uint4*>(tile + off) = make_uint4(e[0].big, e[1].big, e[2].big, e[3].big);
    if constexpr (X3)
      *reinterpret_cast<uint4*>(tile + small + off) =
          make_uint4(e[0].small, e[1].small, e[2].small, e[3].small);
  });
}

}  // namespace strata::cuda::flash
