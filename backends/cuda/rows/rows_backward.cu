// cuda softmax_backward, log_softmax_backward (dx, grad, y) and
// layer_norm_backward, rms_norm_backward (dx, grad, x, weight; side =
// dweight and dbias in the compute dtype) on f32, f64, f16, bf16
// (docs/guide/ops.md, "IterArgs conventions"): which kernel of
// softmax_backward_kernels.cuh / norm_backward_kernels.cuh takes a call.
//  * softmax: softmax_backward_fast on contiguous f32/f16/bf16 rows that fit
//    its registers, else softmax_backward_kernel;
//  * norms: norm_backward_fast on contiguous f32/f16/bf16 rows of up to 8192
//    elements, one 16-byte vector of each operand per thread (two for f32
//    rows beyond 4096 elements), one block of 1024 threads per SM, so that the partial sums
//    of dweight and dbias are one row per SM), else norm_backward_kernel
//    (at most one block per SM when the partial sums are wanted). The
//    partial rows live in scratch from the stream-ordered pool, on the op's
//    stream, freed (stream-ordered) after norm_partials_sum has read them.
// Every kernel runs on the op's stream and is launched with PDL.
#include <cstdint>
#include <type_traits>

#include "cuda/rows/norm_backward_kernels.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "cuda/rows/softmax_backward_kernels.cuh"
#include "cuda/runtime/stream_scratch.hpp"

namespace strata::cuda {
namespace {

template <bool Log, class T>
void softmax_backward(const IterArgs& a) {
  const RowParams p = make_row_params<T>(a, 0b111);  // dx, grad, y
  if (p.rows == 0 || p.n == 0) return;
  launch_softmax_backward<Log, T>(p, static_cast<cudaStream_t>(a.stream));
}

// Calls launch(integral_constant<TPR>, integral_constant<NV>) for the fast
// kernel's configuration that fits p: one 16-byte vector of each operand
// per thread (NV = 1) and the fewest threads per row from 32 to kNormBlock,
// else two vectors per thread (NV = 2: f32 rows of 4097-8192 elements,
// where a few registers spill); false when none fits (not vectorisable,
// f64, rows over more than one outer dim, or rows of more than
// kNormBlock * 2 vectors).
template <class T, class L>
bool norm_backward_dispatch(const RowParams& p, L&& launch) {
  if constexpr (sizeof(T) == 8) {
    return false;
  } else {
    using std::integral_constant;
    if (!p.vec || p.outer_dims != 1) return false;
    const std::int64_t nvec = p.n / (16 / sizeof(T));
    auto pick = [&](auto nv) {
      constexpr int NV = decltype(nv)::value;
      const std::int64_t threads = (nvec + NV - 1) / NV;
      if (threads <= 32)
        launch(integral_constant<int, 32>{}, nv);
      else if (threads <= 64)
        launch(integral_constant<int, 64>{}, nv);
      else if (threads <= 128)
        launch(integral_constant<int, 128>{}, nv);
      else if (threads <= 256)
        launch(integral_constant<int, 256>{}, nv);
      else if (threads <= 512)
        launch(integral_constant<int, 512>{}, nv);
      else
        launch(integral_constant<int, kNormBlock>{}, nv);
    };
    if (nvec <= kNormBlock) {
      pick(integral_constant<int, 1>{});
      return true;
    }
    if constexpr (sizeof(T) == 4) {
      if (nvec <= 2 * kNormBlock) {
        pick(integral_constant<int, 2>{});
        return true;
      }
    }
    return false;
  }
}

int capped_grid(std::int64_t rows, int rows_per_block, int cap) {
  const std::int64_t want = (rows + rows_per_block - 1) / rows_per_block;
  return static_cast<int>(want < 1 ? 1 : (want < cap ? want : cap));
}

// iparam[0]: bit 0 dweight wanted, bit 1 dbias wanted (side's rows 0 and 1).
template <bool RMS, class T>
void norm_backward(const IterArgs& a) {
  using C = compute_t<T>;
  const RowParams p = make_row_params<T>(a, 0b1111);  // dx, grad, x, weight
  if (p.rows == 0 || p.n == 0) return;                // the front end fills the sums of no rows
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const auto wanted = static_cast<unsigned>(a.iparam[0]);
  const bool params = wanted != 0;
  const int kp = RMS ? 1 : 2;
  // The units (blocks or groups) that keep partial sums, and how to launch.
  std::int64_t units = 0;
  int grid = 0, block = 0;
  void (*kernel)(RowParams, NormPartials) = nullptr;
  const bool fast = norm_backward_dispatch<T>(p, [&](auto tpr, auto nv) {
    constexpr int TPR = decltype(tpr)::value, NV = decltype(nv)::value;
    grid = capped_grid(p.rows, kNormBlock / TPR, sm_count() * (params ? 1 : 2));
    block = kNormBlock;
    units = grid;
    kernel = params ? &norm_backward_fast<RMS, T, TPR, NV, true>
                    : &norm_backward_fast<RMS, T, TPR, NV, false>;
  });
  if (!fast) {
    const bool warp = p.n <= 32 * kCap;
    const int rpb = warp ? kRowThreads / 32 : 1;
    grid = params ? capped_grid(p.rows, rpb, sm_count()) : row_grid(p.rows, rpb);
    block = kRowThreads;
    units = std::int64_t(grid) * rpb;
    kernel = warp ? &norm_backward_kernel<RMS, T, 32> : &norm_backward_kernel<RMS, T, kRowThreads>;
  }
  const StreamScratch scratch(params ? std::size_t(units * kp * p.n) * sizeof(C) : 0, st);
  launch_row_kernel(kernel, grid, block, st, p, NormPartials{scratch.p, kp});
  if (!params) return;
  const Operand& side = a.side;
  launch_row_kernel(&norm_partials_sum<C>, static_cast<int>((kp * p.n + 31) / 32), 256, st,
                    static_cast<const C*>(scratch.p), units, p.n, kp, static_cast<C*>(side.data),
                    side.strides[0], side.strides[1], wanted);
}

}  // namespace

std::vector<EwEntry> row_backward_entries() {
  std::vector<EwEntry> v;
  for_float_dtypes([&](DType dt, auto t) {
    using T = typename decltype(t)::type;
    v.push_back({"softmax_backward", dt, &softmax_backward<false, T>});
    v.push_back({"log_softmax_backward", dt, &softmax_backward<true, T>});
    v.push_back({"layer_norm_backward", dt, &norm_backward<false, T>});
    v.push_back({"rms_norm_backward", dt, &norm_backward<true, T>});
  });
  return v;
}

}  // namespace strata::cuda
