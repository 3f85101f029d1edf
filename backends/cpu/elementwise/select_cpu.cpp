// cpu kernels of tril / triu and dropout: elementwise ops whose result
// depends on the element's row-major index (the front end builds the
// IterArgs with make_ordered_iter), on the engine's runs (engine.hpp:
// for_segments, OpenMP over chunks), with the rules shared with cuda
// (common/select_functors.hpp). Operands: docs/guide/ops.md.
#include <algorithm>
#include <bit>
#include <cstdint>

#include "common/select_functors.hpp"
#include "cpu/elementwise/engine.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
namespace {

// tril / triu on any dtype: a pure copy or zero, templated on the element
// size (all-zero bytes are 0, +0.0 and false alike). Within a run the
// column advances by one per element; the row when a matrix row ends.
template <class U, bool Upper>
void tri_kernel(const IterArgs& a) {
  const std::int64_t rows = a.iparam[0], cols = a.iparam[1];
  const auto diagonal = static_cast<std::int64_t>(a.scalar[0]);
  const int in = a.ndim - 1;
  const std::int64_t so = a.op[0].strides[in], sx = a.op[1].strides[in];
  for_segments<2>(a, [&](const std::int64_t* off, std::int64_t len, std::int64_t e) {
    U* o = static_cast<U*>(a.op[0].data) + off[0];
    const U* x = static_cast<const U*>(a.op[1].data) + off[1];
    std::int64_t col = e % cols, row = e / cols % rows;
    for (std::int64_t j = 0; j < len;) {
      const std::int64_t run = std::min(len - j, cols - col);  // to the matrix row's end
      for (std::int64_t t = 0; t < run; ++t)
        o[(j + t) * so] = fn::tri_keeps(Upper, row, col + t, diagonal) ? x[(j + t) * sx] : U(0);
      j += run;
      col += run;
      if (col == cols) {
        col = 0;
        row = row + 1 == rows ? 0 : row + 1;
      }
    }
  });
}

template <class T>
void dropout_kernel(const IterArgs& a) {
  using C = compute_t<T>;
  const double p = a.scalar[0];
  const auto seed = std::bit_cast<std::uint64_t>(a.iparam[0]);
  const std::uint64_t threshold = fn::dropout_threshold(p);
  const auto scale = static_cast<C>(p < 1.0 ? 1.0 / (1.0 - p) : 0.0);  // p = 1 keeps nothing
  const T zero = convert<T>(C(0));
  const int in = a.ndim - 1;
  const std::int64_t so = a.op[0].strides[in], sx = a.op[1].strides[in];
  for_segments<2>(a, [&](const std::int64_t* off, std::int64_t len, std::int64_t e) {
    T* o = static_cast<T*>(a.op[0].data) + off[0];
    const T* x = static_cast<const T*>(a.op[1].data) + off[1];
    for (std::int64_t j = 0; j < len; ++j) {
      const bool keep = fn::dropout_keeps(seed, static_cast<std::uint64_t>(e + j), threshold);
      o[j * so] = keep ? convert<T>(convert<C>(x[j * sx]) * scale) : zero;
    }
  });
}

template <bool Upper>
void (*tri_for(DType dt))(const IterArgs&) {
  switch (itemsize(dt)) {
    case 1:
      return &tri_kernel<std::uint8_t, Upper>;
    case 2:
      return &tri_kernel<std::uint16_t, Upper>;
    case 4:
      return &tri_kernel<std::uint32_t, Upper>;
    default:
      return &tri_kernel<std::uint64_t, Upper>;
  }
}

}  // namespace

void register_cpu_select(Registry& r) {
  for (DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::boolean, DType::i32, DType::i64}) {
    r.add_kernel<IterArgs>("tril", "cpu", dt, "cpu.select.tril", tri_for<false>(dt));
    r.add_kernel<IterArgs>("triu", "cpu", dt, "cpu.select.triu", tri_for<true>(dt));
  }
  const char* name = "cpu.select.dropout";
  r.add_kernel<IterArgs>("dropout", "cpu", DType::f32, name, &dropout_kernel<float>);
  r.add_kernel<IterArgs>("dropout", "cpu", DType::f64, name, &dropout_kernel<double>);
  r.add_kernel<IterArgs>("dropout", "cpu", DType::f16, name, &dropout_kernel<half>);
  r.add_kernel<IterArgs>("dropout", "cpu", DType::bf16, name, &dropout_kernel<bfloat16>);
}

}  // namespace strata::cpu
