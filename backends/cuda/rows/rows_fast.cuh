#pragma once
// The contiguous-row fast path of layer_norm, rms_norm, softmax and
// log_softmax (docs/guide/ops.md, "Row ops"): taken when every walked
// operand's rows are unit-stride, 16-byte aligned and n % VEC == 0 (VEC = 16
// bytes / itemsize), for f32, f16 and bf16 rows of up to 512 * NV * VEC
// elements (8192 f32, 16384 f16/bf16). The row is loaded once, as NV
// 16-byte vectors per thread kept raw in registers (vector i of thread
// `lane` is vector lane + i * TPR of the row, so a warp's loads are
// coalesced), and converted to f32 on each use; nothing is re-read from
// global memory. TPR threads own a row: a warp (4 rows per 128-thread
// block, shuffle reductions only) for rows of up to 128 vectors, else one
// block of 128, 256 or 512 threads per row, whose reductions are warp
// shuffles plus one __syncthreads through a small shared array (two
// alternating buffers, so consecutive reductions need no second barrier).
// f64 and every other layout take the general kernels.
//
// Pipelined mode (layer_norm's 16-bit rows; rms_norm and softmax measured
// faster without it, docs/log/ops.md, "Elementwise and row ops on cuda"):
// 16-bit rows of up to 1024 vectors take at most 2 vectors per thread (4096
// bf16: 256 threads x 2 x 8, as many elements per thread as the f32 case;
// bf16 layer_norm no longer spills, see kMinBlocks); the grid is one wave of
// resident blocks, and each thread copies its vectors of the next
// kStages - 1 rows into its own shared-memory slots with cp.async before the
// current row's reductions, so an 8 KB row's reduction latency hides behind
// the next rows' loads without holding them in registers. f32 rows keep the
// previous kernels.
//
// Register-pipelined candidates (the next 1 or 2 rows loading into
// registers during this row's reductions, weight and bias held in registers)
// measured slower than the modes above on every 16-bit op and were removed
// (docs/log/ops.md, "Rows16 / gelu16 A/B: measured").
#include <cmath>
#include <type_traits>

#include "cuda/rows/rows.cuh"

namespace strata::cuda::fastrow {

inline constexpr int kMaxNV = 4;  // 16-byte vectors per thread

template <int TPR>
inline constexpr int kBlock = TPR < 128 ? 128 : TPR;

// Minimum resident blocks for __launch_bounds__: 1024 threads per SM (64
// registers), or 768 (80 registers) for the staged kernels that need the
// room (layer_norm: at 64 it spills; their rows ahead are in shared
// memory, not registers).
template <int TPR, bool ROOMY>
inline constexpr int kMinBlocks = [] {
  const int threads = ROOMY ? 768 : 1024;
  return threads / kBlock<TPR> > 0 ? threads / kBlock<TPR> : 1;
}();

// Any reduced value across a shuffle: a number, or a statistic of f32
// members (MaxSum, SumM2) member by member.
template <class V>
__device__ __forceinline__ V shfl_xor(V v, int o) {
  if constexpr (std::is_arithmetic_v<V>) {
    return __shfl_xor_sync(0xffffffffu, v, o);
  } else {
    constexpr unsigned kAll = 0xffffffffu;
    if constexpr (sizeof(V) == 2 * sizeof(float)) {
      const auto [a, b] = v;
      return {__shfl_xor_sync(kAll, a, o), __shfl_xor_sync(kAll, b, o)};
    } else {
      static_assert(sizeof(V) == 3 * sizeof(float));
      const auto [a, b, c] = v;
      return {__shfl_xor_sync(kAll, a, o), __shfl_xor_sync(kAll, b, o),
              __shfl_xor_sync(kAll, c, o)};
    }
  }
}

// Shared memory of a Reducer: 2 * W slots of up to 16 bytes.
inline constexpr int kSlotBytes = 16;
template <int TPR>
inline constexpr int kReduceBytes = 2 * (TPR / 32) * kSlotBytes;

// Block-wide (or warp-wide when TPR == 32) reduction; every thread of the
// row gets the same value (the shared partials are combined in one order;
// the shuffle steps need an op whose result does not depend on the order
// of its operands).
template <int TPR>
struct Reducer {
  static constexpr int W = TPR / 32;
  unsigned char* sh;  // kReduceBytes<TPR>, 16-byte aligned
  int k = 0;
  template <class V, class Op>
  __device__ __forceinline__ V operator()(V v, Op op) {
    static_assert(sizeof(V) <= kSlotBytes);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
    if constexpr (W > 1) {
      V* b = reinterpret_cast<V*>(sh + (k & 1) * W * kSlotBytes);
      ++k;
      if (threadIdx.x % 32 == 0) b[threadIdx.x / 32] = v;
      __syncthreads();
      v = b[0];
#pragma unroll
      for (int i = 1; i < W; ++i) v = op(v, b[i]);
    }
    return v;
  }
};

// Loads vector lane + i * TPR of the row for i < NV (zeros past the end).
template <class T, int TPR, int NV>
__device__ __forceinline__ void load_row(const T* x, std::int64_t nvec, int lane,
                                         Vec<T, 16 / sizeof(T)> (&r)[NV]) {
  constexpr int VEC = 16 / sizeof(T);
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const std::int64_t e = lane + std::int64_t(i) * TPR;
    if (e < nvec)
      r[i] = ld_vec<T, VEC>(x + e * VEC);
    else
      r[i] = splat<VEC, T>(cvt<T>(0.0f));
  }
}

// Threads per row for a row length: `base` the table in dispatch; `narrow`
// 16-bit rows of 65-1024 vectors with NV <= 2 (more threads per row, fewer
// registers; layer_norm's staged rows), the rest as base.
enum class Geometry { base, narrow };

// Calls launch(integral_constant<TPR>, integral_constant<NV>) for the
// configuration that fits n under geometry g, or returns false when the
// fast path does not apply (not vectorisable, f64, or too long a row).
template <class T, class L>
bool dispatch(const RowParams& p, Geometry g, L&& launch) {
  if constexpr (sizeof(T) == 8) {
    return false;
  } else {
    constexpr int VEC = 16 / sizeof(T);
    if (!p.vec) return false;
    const std::int64_t nv = p.n / VEC;
    using std::integral_constant;
    if constexpr (sizeof(T) == 2) {
      if (g == Geometry::narrow && nv > 64 && nv <= 512 * 2) {
        if (nv <= 128 * 2)
          launch(integral_constant<int, 128>{}, integral_constant<int, 2>{});
        else if (nv <= 256 * 2)
          launch(integral_constant<int, 256>{}, integral_constant<int, 2>{});
        else
          launch(integral_constant<int, 512>{}, integral_constant<int, 2>{});
        return true;
      }
    }
    if (nv <= 32)
      launch(integral_constant<int, 32>{}, integral_constant<int, 1>{});
    else if (nv <= 64)
      launch(integral_constant<int, 32>{}, integral_constant<int, 2>{});
    else if (nv <= 32 * kMaxNV)
      launch(integral_constant<int, 32>{}, integral_constant<int, kMaxNV>{});
    else if (nv <= 128 * kMaxNV)
      launch(integral_constant<int, 128>{}, integral_constant<int, kMaxNV>{});
    else if (nv <= 256 * kMaxNV)
      launch(integral_constant<int, 256>{}, integral_constant<int, kMaxNV>{});
    else if (nv <= 512 * kMaxNV)
      launch(integral_constant<int, 512>{}, integral_constant<int, kMaxNV>{});
    else
      return false;
    return true;
  }
}

template <int TPR>
inline int grid_for(std::int64_t rows) {
  return row_grid(rows, kBlock<TPR> / TPR);
}

// Launches the kernel pick(integral_constant<TPR>, integral_constant<NV>)
// returns for the base geometry's configuration that fits p (blocks of
// kBlock<TPR>, TPR threads per row), or returns false, launching nothing,
// where dispatch finds none.
template <class T, class Pick>
bool launch_base(const RowParams& p, cudaStream_t st, Pick&& pick) {
  return dispatch<T>(p, Geometry::base, [&](auto tpr, auto nv) {
    constexpr int TPR = decltype(tpr)::value;
    launch_row_kernel(pick(tpr, nv), grid_for<TPR>(p.rows), kBlock<TPR>, st, p);
  });
}

// The pipelined grid: no more blocks than are resident at once, so that
// each group walks several rows. At least kMinBlocks blocks are resident
// (the launch bounds cap the registers; the slots take <= 32 KB per block),
// and the bf16 kernels sit at their caps (ptxas: 64 and 70-80 registers),
// so that is their residency. No occupancy query: nothing but the launch
// happens inside a graph capture.
template <int TPR, bool ROOMY>
inline int grid_resident(std::int64_t rows) {
  const int g = grid_for<TPR>(rows);
  const int cap = sm_count() * kMinBlocks<TPR, ROOMY>;
  return g < cap ? g : cap;
}

// ---- the pipelined mode's staging -------------------------------------------------
// Rows staged ahead: kStages - 1, or none where the slots would pass 32 KB
// of static shared memory per block (NV * block vectors of 16 bytes each).
template <int TPR, int NV>
inline constexpr int kStages = [] {
  constexpr int slot = NV * kBlock<TPR> * 16;
  return 3 * slot <= 32768 ? 3 : (2 * slot <= 32768 ? 2 : 1);
}();

// Whether the pipelined mode stages rows for this configuration: 16-bit
// rows of the narrow dispatch (NV <= 2) whose slots fit two stages or more.
template <class T, int TPR, int NV>
inline constexpr bool kPipelined = sizeof(T) == 2 && NV <= 2 && kStages<TPR, NV> >= 2;

__device__ __forceinline__ void cp_async16(void* smem, const void* g) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// This thread's slots of one stage: vector i of the thread is slot[i * block
// + threadIdx.x] (consecutive threads, consecutive 16 bytes: no bank
// conflicts). Only the thread itself writes and reads its slots, so the
// cp.async wait is the only synchronisation needed.
// Stages row `row` (when < rows; an empty group otherwise, so that every
// iteration commits exactly one group).
template <class T, int TPR, int NV>
__device__ __forceinline__ void stage_row(const RowParams& p, std::int64_t row, std::int64_t nvec,
                                          int lane, Vec<T, 16 / sizeof(T)>* slot) {
  constexpr int VEC = 16 / sizeof(T);
  if (row < p.rows) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const std::int64_t e = lane + std::int64_t(i) * TPR;
      if (e < nvec) cp_async16(&slot[i * kBlock<TPR> + threadIdx.x], x + e * VEC);
    }
  }
  cp_async_commit();
}

// The staged row into registers (zeros past the end), as load_row.
template <class T, int TPR, int NV>
__device__ __forceinline__ void unstage_row(const Vec<T, 16 / sizeof(T)>* slot, std::int64_t nvec,
                                            int lane, Vec<T, 16 / sizeof(T)> (&r)[NV]) {
  constexpr int VEC = 16 / sizeof(T);
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    if (lane + std::int64_t(i) * TPR < nvec)
      r[i] = slot[i * kBlock<TPR> + threadIdx.x];
    else
      r[i] = splat<VEC, T>(cvt<T>(0.0f));
  }
}

// Row loop of a fast kernel: body(row, off, r) for each of this group's rows
// with off its offsets and r its raw vectors (the body may overwrite them). PIPE: the rows come
// through kStages shared slots
// (`stage`, kStages * NV * block vectors), staged kStages - 1 rows ahead.
// It first waits for the previous kernel (launched with PDL: nothing is read
// before this) and lets the next one start.
template <class T, int TPR, int NV, bool PIPE, class Body>
__device__ __forceinline__ void for_rows(const RowParams& p, Vec<T, 16 / sizeof(T)>* stage,
                                         Body&& body) {
  grid_dependency_wait();
  allow_dependents();
  constexpr int VEC = 16 / sizeof(T);
  constexpr int RPB = kBlock<TPR> / TPR;
  const int lane = threadIdx.x % TPR;
  const std::int64_t nvec = p.n / VEC;
  const std::int64_t step = std::int64_t(gridDim.x) * RPB;
  const std::int64_t first = std::int64_t(blockIdx.x) * RPB + threadIdx.x / TPR;
  if constexpr (!PIPE) {
    for (std::int64_t row = first; row < p.rows; row += step) {
      std::int64_t off[kMaxOperands];
      row_offsets(p, row, off);
      Vec<T, VEC> r[NV];
      load_row<T, TPR, NV>(reinterpret_cast<const T*>(p.ptr[1]) + off[1], nvec, lane, r);
      body(row, off, r);
    }
  } else {
    constexpr int S = kStages<TPR, NV>;
    constexpr int slot = NV * kBlock<TPR>;
#pragma unroll
    for (int k = 0; k < S - 1; ++k)
      stage_row<T, TPR, NV>(p, first + k * step, nvec, lane, stage + k * slot);
    int cur = 0;
    for (std::int64_t row = first; row < p.rows; row += step) {
      // The slot of row - step is free again: this thread read it last iteration.
      const int ahead = cur == 0 ? S - 1 : cur - 1;
      stage_row<T, TPR, NV>(p, row + (S - 1) * step, nvec, lane, stage + ahead * slot);
      cp_async_wait<S - 1>();  // this row's group is complete
      Vec<T, VEC> r[NV];
      unstage_row<T, TPR, NV>(stage + cur * slot, nvec, lane, r);
      std::int64_t off[kMaxOperands];
      row_offsets(p, row, off);
      body(row, off, r);
      cur = cur + 1 == S ? 0 : cur + 1;
    }
    cp_async_wait<0>();  // nothing in flight when the block exits
  }
}

}  // namespace strata::cuda::fastrow
