// reference kernels of tril / triu, dropout and topk (operands: docs/guide/
// ops.md, "IterArgs conventions"), written independently of the cpu and
// cuda kernels' shared rules (common/select_functors.hpp):
//   * tril / triu: each element's row and column from its row-major index;
//     kept elements copied as their bytes (every dtype, i64 exactly),
//     dropped ones all-zero bytes (0, +0.0 or false);
//   * dropout: u = (random_bits >> 11) * 2^-53 compared with p in f64, the
//     kept value x / (1 - p) in f64, rounded once;
//   * topk: a stable sort of the row's positions by value in f64 (NaN
//     above every number), the first k taken.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "reference/operand_access.hpp"
#include "reference/row_walk.hpp"
#include "strata/detail/counter_rng.hpp"
#include "strata/registry.hpp"

namespace strata::reference {
namespace {

// Calls body(e, out offset, x offset) for every element, e its row-major
// index (the front end built the IterArgs in out's logical order).
template <class Body>
void for_each_element(const IterArgs& a, Body body) {
  std::int64_t e = 0;
  for_each_row(a, [&](const Row& r) {
    for (std::int64_t j = 0; j < r.n; ++j) body(e++, r.at(0, j), r.at(1, j));
  });
}

template <bool Upper>
void tri(const IterArgs& a) {
  const std::int64_t rows = a.iparam[0], cols = a.iparam[1];
  const auto diagonal = static_cast<std::int64_t>(a.scalar[0]);
  const std::size_t isz = itemsize(a.op[0].dtype);
  auto* out = static_cast<unsigned char*>(a.op[0].data);
  const auto* x = static_cast<const unsigned char*>(a.op[1].data);
  for_each_element(a, [&](std::int64_t e, std::int64_t o, std::int64_t i) {
    const std::int64_t col = e % cols, row = e / cols % rows;
    const bool keep = Upper ? col >= row + diagonal : col <= row + diagonal;
    // memmove: out may be x itself (in place).
    if (keep)
      std::memmove(out + o * static_cast<std::int64_t>(isz), x + i * static_cast<std::int64_t>(isz),
                   isz);
    else
      std::memset(out + o * static_cast<std::int64_t>(isz), 0, isz);
  });
}

void dropout(const IterArgs& a) {
  const double p = a.scalar[0];
  const auto seed = static_cast<std::uint64_t>(a.iparam[0]);
  for_each_element(a, [&](std::int64_t e, std::int64_t o, std::int64_t i) {
    const std::uint64_t bits = detail::random_bits(seed, static_cast<std::uint64_t>(e));
    const double u = static_cast<double>(bits >> 11) * 0x1p-53;
    store(a.op[0], o, u < p ? 0.0 : load(a.op[1], i) / (1.0 - p));
  });
}

// True when a ranks before b: the larger (the smaller when !largest), NaN
// above every number.
bool before(double a, double b, bool largest) {
  if (std::isnan(a) || std::isnan(b)) return largest ? !std::isnan(b) : !std::isnan(a);
  return largest ? a > b : a < b;
}

void topk(const IterArgs& a) {
  const std::int64_t n = a.iparam[0];
  const bool largest = a.iparam[1] != 0;
  std::vector<double> v(static_cast<std::size_t>(n));
  std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
  for_each_row(a, [&](const Row& r) {
    for (std::int64_t j = 0; j < n; ++j) v[static_cast<std::size_t>(j)] = load(a.op[2], r.at(2, j));
    std::iota(pos.begin(), pos.end(), std::int64_t{0});
    std::stable_sort(pos.begin(), pos.end(), [&](std::int64_t x, std::int64_t y) {
      return before(v[static_cast<std::size_t>(x)], v[static_cast<std::size_t>(y)], largest);
    });
    for (std::int64_t j = 0; j < r.n; ++j) {
      const std::int64_t p = pos[static_cast<std::size_t>(j)];
      store(a.op[0], r.at(0, j), v[static_cast<std::size_t>(p)]);
      static_cast<std::int64_t*>(a.op[1].data)[r.at(1, j)] = p;
    }
  });
}

}  // namespace

void register_reference_select(Registry& r) {
  for (DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::boolean, DType::i32, DType::i64}) {
    r.add_kernel<IterArgs>("tril", "reference", dt, "reference.select.tril", &tri<false>);
    r.add_kernel<IterArgs>("triu", "reference", dt, "reference.select.triu", &tri<true>);
  }
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    r.add_kernel<IterArgs>("dropout", "reference", dt, "reference.select.dropout", &dropout);
    r.add_kernel<IterArgs>("topk", "reference", dt, "reference.select.topk", &topk);
  }
}

}  // namespace strata::reference
