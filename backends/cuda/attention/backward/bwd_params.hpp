#pragma once
// The by-value argument of the softmax_attention backward kernels
// (backward/preprocess.cuh, backward/ffma.cuh, backward/mma_*.cuh), built once
// per call by the launcher (backward/launch.cu): the front end's struct, with
// q, k, v and dout possibly pointing at packed copies (the mma path), and
// the two per-row workspaces the preprocess kernel fills.
//
//   L  [B... * Hq][Mp]: lse (times log2(e) for the mma kernels, which work
//                       in base 2), with +inf where the row kept no key
//                       (lse = -inf) and on the padding rows M <= i < Mp, so
//                       that exp(s - L) is 0 there with no test in the main
//                       loops;
//   Dw [B... * Hq][Mp]: rowsum(dO o O) - dlse (0 on the padding rows).
//
// Mp is M rounded up to kRowPad, so that every query tile of the kernels
// (at most kRowPad rows, a divisor of it) reads whole 16-byte pieces of both.
#include <cstdint>

#include "strata/attention_args.hpp"

namespace strata::cuda::bwd {

inline constexpr std::int64_t kRowPad = 128;

struct BwdParams {
  AttentionBackwardArgs g;
  void* L = nullptr;   // T: the FFMA kernels' compute type; f32 for the mma kernels
  void* Dw = nullptr;  // likewise
  std::int64_t Mp = 0;
  std::int64_t bh = 1;     // B... * Hq: the workspaces' rows of Mp
  std::int64_t group = 1;  // Hq / Hkv
  std::int64_t tiles = 1;  // the launched kernel's tiles along its rows (keys or queries)
  double scale = 1;        // a.scale
  float scale_log2 = 0;    // scale * log2(e) (the mma kernels' base-2 scores)
  bool base2 = false;      // L in base 2 (the mma kernels)
};

}  // namespace strata::cuda::bwd
