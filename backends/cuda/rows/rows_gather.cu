// cuda embedding (out [..., D], ids i32/i64 with stride 0 along the row,
// side = table [V, D]) and rotary (out, x, positions i32/i64; scalar[0] =
// theta, iparam[0] = rotary dims r, iparam[1] = style) on f32, f64, f16,
// bf16. One warp per row, lanes along it.
//
// embedding checks every id first: first_bad_id (rows_ids.cu, shared with
// index_copy) records the smallest row index whose id is outside [0, V) in
// device memory (atomicMin), copies it back and synchronises the stream; the
// launcher throws "embedding: ids holds X at index I, outside [0, V)" (I in
// the iteration's row order, as the reference) before the gather is
// launched, so a bad id leaves out untouched. While the stream is being
// captured into a graph nothing may synchronise: the check is skipped and
// the gather leaves the row of a bad id unwritten (never reading outside the
// table); the graph's owner checks its ids (docs/guide/graphs.md).
#include <cmath>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "cuda/rows/rows_ids.cuh"
#include "cuda/rows/rows_warp.cuh"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

struct Table {
  const char* data;
  std::int64_t s0, s1;
  std::int64_t rows;  // V: ids outside [0, V) are skipped
};

template <class T, class I>
__global__ void __launch_bounds__(kRowThreads) gather_kernel(RowParams p, Table t) {
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % 32;
  for_warp_rows(p, [&](const std::int64_t(&off)[kMaxOperands]) {
    const std::int64_t id = load_id<I>(p.ptr[1], off[1]);
    if (id < 0 || id >= t.rows) return;  // only while capturing (checked otherwise)
    const T* src = reinterpret_cast<const T*>(t.data) + id * t.s0;
    T* dst = reinterpret_cast<T*>(p.ptr[0]) + off[0];
    constexpr int VEC = 16 / sizeof(T);
    if (p.vec) {
      for (std::int64_t e = std::int64_t(lane) * VEC; e < p.n; e += 32 * VEC)
        st_vec<T, VEC>(dst + e, ld_vec<T, VEC>(src + e));
    } else {
      for (std::int64_t e = lane; e < p.n; e += 32) dst[e * p.row_stride[0]] = src[e * t.s1];
    }
  });
}

template <class T, class I>
void embedding_as(const IterArgs& a) {
  RowParams p = make_row_params(a);
  if (p.rows == 0) return;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const std::int64_t vocab = a.side.shape[0];
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(st, &capture));
  if (capture == cudaStreamCaptureStatusNone) {
    const BadId bad = first_bad_id(p, 1, a.op[1].dtype, vocab, st, "embedding id check");
    if (bad.row >= 0)
      fail("embedding", "ids holds ", bad.id, " at index ", bad.row, ", outside [0, ", vocab, ")");
  }
  const Table t{static_cast<const char*>(a.side.data), a.side.strides[0], a.side.strides[1], vocab};
  constexpr int VEC = 16 / sizeof(T);
  p.vec = p.n % VEC == 0 && t.s1 == 1 && p.row_stride[0] == 1 && t.s0 % VEC == 0 &&
          reinterpret_cast<std::uintptr_t>(t.data) % 16 == 0 &&
          reinterpret_cast<std::uintptr_t>(p.ptr[0]) % 16 == 0;
  for (int j = 0; j < p.outer_dims && p.vec; ++j) p.vec = p.outer_strides[0][j] % VEC == 0;
  launch_row_kernel(gather_kernel<T, I>, row_grid(p.rows, kWarpsPerBlock), kRowThreads, st, p, t);
}

template <class T>
void embedding(const IterArgs& a) {
  if (a.op[1].dtype == DType::i32)
    embedding_as<T, std::int32_t>(a);
  else
    embedding_as<T, std::int64_t>(a);
}

// Rotary's inverse frequency of pair i, in the compute type: as Hugging
// Face, inv_freq in f32 for f32 and 16-bit x (in f64 for f64 x).
template <class C>
__device__ __forceinline__ C inv_freq(std::int64_t i, std::int64_t r, double theta) {
  const double e = -2.0 * static_cast<double>(i) / static_cast<double>(r);
  return static_cast<C>(pow(theta, e));
}

// How many pairs of each lane keep their inverse frequency in registers
// across the rows (rotary dims up to 32 x 2 x kFreqPerLane); pairs beyond
// compute it per row.
constexpr int kFreqPerLane = 4;

// Rotary: lanes over the r/2 pairs of a row, then over the copied tail. The
// inverse frequencies depend on the pair only, so each lane computes its
// own once (f64 pow is the kernel's dearest instruction), not once per row.
template <class T, class I>
__global__ void __launch_bounds__(kRowThreads) rotary_kernel(RowParams p) {
  using C = compute_t<T>;
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % 32;
  const std::int64_t r = p.iparam[0], half = r / 2;
  const bool inter = p.iparam[1] == 1;
  const double theta = p.scalar[0];
  C inv[kFreqPerLane];
#pragma unroll
  for (int k = 0; k < kFreqPerLane; ++k)
    inv[k] = lane + 32 * k < half ? inv_freq<C>(lane + 32 * k, r, theta) : C(0);
  for_warp_rows(p, [&](const std::int64_t(&off)[kMaxOperands]) {
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    T* out = reinterpret_cast<T*>(p.ptr[0]) + off[0];
    const std::int64_t pos = load_id<I>(p.ptr[2], off[2]);
    const auto rotate_pair = [&](std::int64_t i, C f) {
      C c, s;
      if constexpr (std::is_same_v<C, double>) {
        sincos(static_cast<double>(pos) * f, &s, &c);
      } else {
        // As Hugging Face: the angle rounded to f32, the precise sincosf of it.
        const float angle = __fmul_rn(static_cast<float>(pos), f);
        sincosf(angle, &s, &c);
      }
      const std::int64_t i0 = inter ? 2 * i : i, i1 = inter ? 2 * i + 1 : i + half;
      const C x0 = cvt<C>(x[i0 * p.row_stride[1]]), x1 = cvt<C>(x[i1 * p.row_stride[1]]);
      out[i0 * p.row_stride[0]] = cvt<T>(x0 * c - x1 * s);
      out[i1 * p.row_stride[0]] = cvt<T>(x1 * c + x0 * s);
    };
#pragma unroll
    for (int k = 0; k < kFreqPerLane; ++k)
      if (lane + 32 * k < half) rotate_pair(lane + 32 * k, inv[k]);
    for (std::int64_t i = lane + 32 * kFreqPerLane; i < half; i += 32)
      rotate_pair(i, inv_freq<C>(i, r, theta));
    for (std::int64_t j = r + lane; j < p.n; j += 32)
      out[j * p.row_stride[0]] = x[j * p.row_stride[1]];
  });
}

template <class T>
void rotary(const IterArgs& a) {
  RowParams p = make_row_params(a);
  if (p.rows == 0 || p.n == 0) return;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const int grid = row_grid(p.rows, kWarpsPerBlock);
  if (a.op[2].dtype == DType::i32)
    launch_row_kernel(rotary_kernel<T, std::int32_t>, grid, kRowThreads, st, p);
  else
    launch_row_kernel(rotary_kernel<T, std::int64_t>, grid, kRowThreads, st, p);
}

}  // namespace

std::vector<EwEntry> row_gather_entries() {
  std::vector<EwEntry> v;
  for_float_dtypes([&](DType dt, auto t) {
    using T = typename decltype(t)::type;
    v.push_back({"embedding", dt, &embedding<T>});
    v.push_back({"rotary", dt, &rotary<T>});
  });
  return v;
}

}  // namespace strata::cuda
