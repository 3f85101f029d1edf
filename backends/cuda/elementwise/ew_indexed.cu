// cuda tril / triu (every dtype, moved as their bits) and dropout (f32,
// f64, f16, bf16): elementwise ops whose result depends on the element's
// row-major index, which the front end keeps as the iteration's linear
// index (make_ordered_iter). One grid-stride kernel, one element per
// thread per step, the operands' offsets decoded from the linear index as
// the engine's strided path does (ew_params.cuh: 32-bit fast division
// when everything fits, else 64-bit), the rule per element from
// common/select_functors.hpp, shared with the cpu kernels. Operands:
// docs/guide/ops.md, "IterArgs conventions".
#include <bit>
#include <cstdint>

#include "common/select_functors.hpp"
#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/engine.cuh"
#include "cuda/elementwise/ew_types.cuh"

namespace strata::cuda {
namespace {

template <class I, class Op, class Out, class In>
__global__ void __launch_bounds__(kThreads) ew_indexed_kernel(EwParams<2, I> p, Op op) {
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const I numel = static_cast<I>(p.numel);
  const I step = I(gridDim.x) * kThreads;
  for (I i = I(blockIdx.x) * kThreads + I(threadIdx.x); i < numel; i += step) {
    I off[2];
    decode(p, i, off);
    reinterpret_cast<Out*>(p.ptr[0])[off[0]] = op(std::int64_t(i), ld<In>(p.ptr[1], off[1]));
  }
}

template <class Out, class In, class Op>
void launch_indexed(const IterArgs& a, const Op& op) {
  const std::int64_t numel = a.numel();
  if (numel == 0) return;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const int grid = grid_for(numel, kThreads);
  if (fits_int32(a, 2)) {
    CUDA_CHECK(launch_kernel(ew_indexed_kernel<std::int32_t, Op, Out, In>, grid, kThreads, 0, st,
                             make_params<2, std::int32_t>(a), op));
  } else {
    CUDA_CHECK(launch_kernel(ew_indexed_kernel<std::int64_t, Op, Out, In>, grid, kThreads, 0, st,
                             make_params<2, std::int64_t>(a), op));
  }
}

// Element e of the iteration is (row, col) = (e / cols % rows, e % cols) of
// its matrix.
template <class U, bool Upper>
struct TriOp {
  std::int64_t rows, cols, diagonal;
  __device__ __forceinline__ U operator()(std::int64_t e, U x) const {
    const std::int64_t col = e % cols, row = e / cols % rows;
    return fn::tri_keeps(Upper, row, col, diagonal) ? x : U(0);
  }
};

template <class U, bool Upper>
void tri(const IterArgs& a) {
  launch_indexed<U, U>(
      a, TriOp<U, Upper>{a.iparam[0], a.iparam[1], static_cast<std::int64_t>(a.scalar[0])});
}

template <class T>
struct DropoutOp {
  std::uint64_t seed, threshold;
  compute_t<T> scale;
  __device__ __forceinline__ T operator()(std::int64_t e, T x) const {
    using C = compute_t<T>;
    return fn::dropout_keeps(seed, static_cast<std::uint64_t>(e), threshold)
               ? cvt<T>(cvt<C>(x) * scale)
               : cvt<T>(C(0));
  }
};

template <class T>
void dropout(const IterArgs& a) {
  const double p = a.scalar[0];
  launch_indexed<T, T>(
      a, DropoutOp<T>{std::bit_cast<std::uint64_t>(a.iparam[0]), fn::dropout_threshold(p),
                      static_cast<compute_t<T>>(p < 1.0 ? 1.0 / (1.0 - p) : 0.0)});
}

template <bool Upper>
void (*tri_for(DType dt))(const IterArgs&) {
  switch (itemsize(dt)) {
    case 1:
      return &tri<std::uint8_t, Upper>;
    case 2:
      return &tri<std::uint16_t, Upper>;
    case 4:
      return &tri<std::uint32_t, Upper>;
    default:
      return &tri<std::uint64_t, Upper>;
  }
}

}  // namespace

std::vector<EwEntry> ew_indexed_entries() {
  std::vector<EwEntry> v;
  for (DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::boolean, DType::i32, DType::i64}) {
    v.push_back({"tril", dt, tri_for<false>(dt)});
    v.push_back({"triu", dt, tri_for<true>(dt)});
  }
  for_float_dtypes([&](DType dt, auto t) {
    v.push_back({"dropout", dt, &dropout<typename decltype(t)::type>});
  });
  return v;
}

}  // namespace strata::cuda
