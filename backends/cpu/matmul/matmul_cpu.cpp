// cpu matmul and linear (one registry op, "matmul"): Eigen's GEMM through
// Eigen::Map with strides, no copy for the layouts BLAS takes.
//
//   layout of one [rows, cols] matrix      how Eigen sees it
//   column stride 1, row stride >= cols    RowMajor, outer stride = row stride
//   row stride 1, column stride >= rows    ColMajor, outer stride = column stride
//                                          (a transposed view)
//   anything else (both strides != 1,      copied first to a contiguous
//   zero or negative strides, rows that    row-major temporary
//   overlap)
//
// f16/bf16 are converted to f32 temporaries, multiplied in f32 and rounded
// once on the way out. The bias of linear: with an output Eigen can write
// directly, out is filled with the bias broadcast over rows and the GEMM
// accumulates into it (beta = 1, one pass over out); otherwise the result
// goes to an f32/f64 temporary and the bias is added as it is rounded or
// copied out. MatmulArgs::accumulate (out += a b + bias): an out Eigen
// writes directly gets the GEMM with beta = 1 (the bias, if any, added to
// out first instead of filled); through the temporary (f16/bf16 always),
// out's values are read in f32/f64 and added with the product and the
// bias before the one rounding.
//
// Instruction set: Eigen picks its SIMD packets (SSE2, AVX2+FMA, AVX-512)
// from the compiler's target, the CMake option STRATA_CPU_ARCH (default
// x86-64-v3), applied to the whole tree alike (docs/guide/matmul.md, "matmul on the CPU:
// instruction set and threads").
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <type_traits>
#include <vector>

#include "cpu/matmul/gemm_threads.hpp"
#include "cpu/threads.hpp"
#include "cpu/workspace.hpp"
#include "strata/dtype.hpp"
#include "strata/error.hpp"
#include "strata/matmul_args.hpp"
#include "strata/registry.hpp"
#include "strata/tuning.hpp"

namespace strata::cpu {
namespace {

using gemm::classify;
using gemm::Index;
using gemm::Kind;
using gemm::Lay;

template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class To, class From>
inline To cvt(From x) {
  if constexpr (std::is_same_v<To, From>)
    return x;
  else if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>)
    return static_cast<To>(static_cast<float>(x));
  else
    return To(static_cast<float>(x));  // f32 -> half / bfloat16
}

// Offset of batch index `bi` (row-major over the batch shape) in an operand.
inline Index batch_offset(const MatmulArgs& a, const Index* strides, Index bi) {
  Index off = 0;
  for (int d = a.batch_rank - 1; d >= 0; --d) {
    off += (bi % a.batch_shape[d]) * strides[d];
    bi /= a.batch_shape[d];
  }
  return off;
}

// An input as the GEMM reads it: the operand itself, or a packed copy.
template <class C>
struct Input {
  const C* base = nullptr;
  Index bstride[kMaxDims] = {};
  Lay lay{Kind::row, 0};
  std::vector<C> own;
};

// Rows [first, last) of the batch*rows rows of a pack, spread over threads
// when there are many elements (no allocation, no throw inside).
template <class F>
void parallel_rows(Index nrows, Index elems, const F& f) {
  if (elems < (Index(1) << 16) || omp_get_max_threads() == 1) {
    for (Index r = 0; r < nrows; ++r) f(r);
    return;
  }
#pragma omp parallel for schedule(static)
  for (Index r = 0; r < nrows; ++r) f(r);
}

template <class T, class C>
Input<C> prepare(const MatmulArgs& a, const Operand& op, Index rows, Index cols) {
  const int br = a.batch_rank;
  Input<C> in;
  in.lay = classify(rows, cols, op.strides[br], op.strides[br + 1]);
  if (std::is_same_v<T, C> && in.lay.kind != Kind::copy) {
    in.base = static_cast<const C*>(op.data);
    for (int d = 0; d < br; ++d) in.bstride[d] = op.strides[d];
    return in;
  }
  // Packed row-major, one matrix per distinct batch index (a broadcast
  // batch dim, stride 0, stays stride 0 in the pack).
  Index count = 1;
  for (int d = br - 1; d >= 0; --d) {
    if (op.strides[d] == 0 || a.batch_shape[d] == 1) continue;
    in.bstride[d] = count * rows * cols;
    count *= a.batch_shape[d];
  }
  in.own = workspace<C>({count, rows, cols}, "matmul", "a packed copy of an input");
  in.lay = {Kind::row, cols};
  in.base = in.own.data();  // a moved vector keeps its buffer
  const T* src = static_cast<const T*>(op.data);
  C* dst = in.own.data();
  const Index rs = op.strides[br], cs = op.strides[br + 1];
  const Index batch = a.batch_count();
  // Each distinct matrix once: batch indices whose broadcast coordinates are
  // all 0 (the others map to the same source and destination).
  std::vector<Index> firsts;
  for (Index bi = 0; bi < batch; ++bi) {
    Index rest = bi;
    bool first = true;
    for (int d = br - 1; d >= 0 && first; --d) {
      if (in.bstride[d] == 0 && rest % a.batch_shape[d] != 0) first = false;
      rest /= a.batch_shape[d];
    }
    if (first) firsts.push_back(bi);
  }
  const Index nfirst = static_cast<Index>(firsts.size());
  parallel_rows(nfirst * rows, nfirst * rows * cols, [&](Index r) {
    const Index bi = firsts[static_cast<std::size_t>(r / rows)], i = r % rows;
    const T* s = src + batch_offset(a, op.strides, bi) + i * rs;
    C* d = dst + batch_offset(a, in.bstride, bi) + i * cols;
    for (Index j = 0; j < cols; ++j) d[j] = cvt<C>(s[j * cs]);
  });
  return in;
}

// out[b, m, n] = value(b, m, n) + bias[n] (+ out[b, m, n] itself, read in
// C, when accumulating), rounded to T once; any strides.
template <class T, class C, class V>
void write_out(const MatmulArgs& a, const V& value) {
  const int br = a.batch_rank;
  const Index M = a.M, N = a.N, batch = a.batch_count();
  T* out = static_cast<T*>(a.out.data);
  const T* bias = static_cast<const T*>(a.bias.data);
  const Index om = a.out.strides[br], on = a.out.strides[br + 1];
  const Index bs = bias ? a.bias.strides[0] : 0;
  parallel_rows(batch * M, batch * M * N, [&](Index r) {
    const Index bi = r / M, m = r % M;
    T* o = out + batch_offset(a, a.out.strides, bi) + m * om;
    for (Index n = 0; n < N; ++n) {
      C v = value(bi, m, n);
      if (a.accumulate) v += cvt<C>(o[n * on]);
      if (bias) v += cvt<C>(bias[n * bs]);
      o[n * on] = cvt<T>(v);
    }
  });
}

template <class T>
void matmul_cpu(const MatmulArgs& a) {
  using C = compute_t<T>;
  const Index M = a.M, N = a.N, K = a.K, batch = a.batch_count();
  const int br = a.batch_rank;
  if (K == 0) {  // out = bias or 0 (accumulate: out += bias, or out unchanged)
    if (a.accumulate && !a.bias.data) return;
    write_out<T, C>(a, [](Index, Index, Index) { return C(0); });
    return;
  }
  const Input<C> ia = prepare<T, C>(a, a.a, M, K);
  const Input<C> ib = prepare<T, C>(a, a.b, K, N);

  // The output: written in place when Eigen can map it, else a temporary.
  Lay lc = classify(M, N, a.out.strides[br], a.out.strides[br + 1]);
  const bool direct = std::is_same_v<T, C> && lc.kind != Kind::copy;
  std::vector<C> tmp;
  C* cbase = static_cast<C*>(a.out.data);
  Index cstride[kMaxDims] = {};
  if (direct) {
    for (int d = 0; d < br; ++d) cstride[d] = a.out.strides[d];
  } else {
    tmp = workspace<C>({batch, M, N}, "matmul", "the output's staging copy");
    cbase = tmp.data();
    lc = {Kind::row, N};
    Index s = M * N;
    for (int d = br - 1; d >= 0; --d) {
      cstride[d] = s;
      s *= a.batch_shape[d];
    }
  }
  // Written in place: out = bias broadcast over rows (accumulate: out +=
  // bias), then out += a b; without a bias out = a b (accumulate: +=).
  // Through the temporary: tmp = a b, and write_out adds out's own values
  // (accumulate) and the bias as it rounds once.
  const bool fill_bias = direct && a.bias.data != nullptr;
  const bool acc = fill_bias || (direct && a.accumulate);
  const C* bias = static_cast<const C*>(a.bias.data);
  const Index bs = a.bias.data ? a.bias.strides[0] : 0;

  auto one = [&](Index bi) {
    const C* pa = ia.base + batch_offset(a, ia.bstride, bi);
    const C* pb = ib.base + batch_offset(a, ib.bstride, bi);
    C* pc = cbase + batch_offset(a, cstride, bi);
    if (fill_bias) {
      for (Index m = 0; m < M; ++m)
        for (Index n = 0; n < N; ++n) {
          C& c = pc[lc.kind == Kind::row ? m * lc.ld + n : m + n * lc.ld];
          c = a.accumulate ? c + bias[n * bs] : bias[n * bs];
        }
    }
    gemm::gemm_threaded(pa, ia.lay, pb, ib.lay, pc, lc, M, N, K, acc);
  };

  const int threads = omp_get_max_threads();
  const double work = double(M) * double(N) * double(K);
  if (batch > 1 && threads > 1 && (work <= double(1 << 18) || batch >= threads)) {
    std::exception_ptr err;
#pragma omp parallel for schedule(dynamic, 1)
    for (Index bi = 0; bi < batch; ++bi) {
      try {
        one(bi);
      } catch (...) {
#pragma omp critical(strata_matmul_err)
        if (!err) err = std::current_exception();
      }
    }
    if (err) rethrow_after_region(err, "matmul");
  } else {
    for (Index bi = 0; bi < batch; ++bi) one(bi);
  }

  if (!direct) {
    const Index cs0 = M * N;
    write_out<T, C>(a, [&](Index bi, Index m, Index n) { return tmp[bi * cs0 + m * N + n]; });
  }
}

}  // namespace

void register_cpu_matmul(Registry& r) {
  r.add_kernel<MatmulArgs>("matmul", "cpu", DType::f32, "cpu.matmul.eigen", &matmul_cpu<float>);
  r.add_kernel<MatmulArgs>("matmul", "cpu", DType::f64, "cpu.matmul.eigen", &matmul_cpu<double>);
  r.add_kernel<MatmulArgs>("matmul", "cpu", DType::f16, "cpu.matmul.eigen_f32", &matmul_cpu<half>);
  r.add_kernel<MatmulArgs>("matmul", "cpu", DType::bf16, "cpu.matmul.eigen_f32",
                           &matmul_cpu<bfloat16>);
}

}  // namespace strata::cpu
