// IterArgs builders (see detail/iter.hpp). The order of work: expand every
// input to the output's shape (stride 0), flip dims the output walks
// backwards (so the output's strides are positive), then on plain operands
// drop size-1 dims, order dims by the output's stride and merge neighbours
// that every operand walks as one.
#include "strata/detail/iter.hpp"

#include <algorithm>
#include <cstdlib>

namespace strata::detail {
namespace {

bool broadcastable(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const std::size_t lead = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

// Views of out and every input with the output's shape and its negative
// strides flipped, as operands.
void collect(IterArgs& it, const Tensor& out, std::initializer_list<const Tensor*> inputs,
             int keep_last) {
  bool flip = false;
  for (int d = 0; d < out.dim() - keep_last; ++d) flip = flip || out.strides()[d] < 0;
  auto prepare = [&](const Tensor& t) {
    Tensor v = t.shape() == out.shape() ? t : t.expand(out.shape());
    if (flip)
      for (int d = 0; d < out.dim() - keep_last; ++d)
        if (out.strides()[d] < 0) v = v.flip(d);
    return v.operand();
  };
  it.nops = 0;
  it.op[it.nops++] = prepare(out);
  for (const Tensor* in : inputs) {
    Operand o;
    if (in != nullptr && in->defined()) {
      o = prepare(*in);
    } else {
      o.rank = out.dim();  // absent: data stays null
    }
    it.op[it.nops++] = o;
  }
}

// Drops size-1 dims among the first `n` dims, orders them by the output's
// |stride| (largest outermost; ties by the inputs' strides) unless `keep_order`,
// then merges neighbours; dims from `n` on (the row) are kept as they are.
void simplify(IterArgs& it, const Shape& shape, int n, bool keep_order = false) {
  const int r = static_cast<int>(shape.size());
  int dims[kMaxDims];
  int nd = 0;
  for (int d = 0; d < n; ++d)
    if (shape[d] != 1) dims[nd++] = d;
  auto outer_first = [&](int x, int y) {
    for (int o = 0; o < it.nops; ++o) {
      const std::int64_t sx = std::llabs(it.op[o].strides[x]), sy = std::llabs(it.op[o].strides[y]);
      if (sx != sy) return sx > sy;
    }
    return x < y;
  };
  // Insertion sort: at most 8 dims.
  for (int i = 1; i < nd && !keep_order; ++i)
    for (int j = i; j > 0 && outer_first(dims[j], dims[j - 1]); --j)
      std::swap(dims[j], dims[j - 1]);
  const int nd_outer = nd;
  for (int d = n; d < r; ++d) dims[nd++] = d;

  std::int64_t new_shape[kMaxDims];
  std::int64_t new_strides[kMaxOperands][kMaxDims];
  int m = 0;
  for (int i = 0; i < nd; ++i) {
    const int d = dims[i];
    bool merge = m > 0 && i < nd_outer;  // the row is never merged
    for (int o = 0; merge && o < it.nops; ++o)
      merge = new_strides[o][m - 1] == it.op[o].strides[d] * shape[d];
    if (merge) {
      new_shape[m - 1] *= shape[d];
      for (int o = 0; o < it.nops; ++o) new_strides[o][m - 1] = it.op[o].strides[d];
    } else {
      new_shape[m] = shape[d];
      for (int o = 0; o < it.nops; ++o) new_strides[o][m] = it.op[o].strides[d];
      ++m;
    }
  }
  if (m == 0) {  // a 0-d op, or every dim of size 1
    new_shape[0] = 1;
    for (int o = 0; o < it.nops; ++o) new_strides[o][0] = 0;
    m = 1;
  }
  it.ndim = m;
  for (int i = 0; i < m; ++i) it.shape[i] = new_shape[i];
  for (int o = 0; o < it.nops; ++o) {
    it.op[o].rank = m;
    for (int i = 0; i < kMaxDims; ++i) {
      it.op[o].shape[i] = i < m ? new_shape[i] : 0;
      it.op[o].strides[i] = i < m ? new_strides[o][i] : 0;
    }
  }
}

}  // namespace

Shape broadcast_all(const char* op, std::initializer_list<Named> ts) {
  Shape r;
  const Named* first = nullptr;
  for (const Named& n : ts) {
    if (!n.t->defined()) continue;
    if (first == nullptr) {
      first = &n;
      r = n.t->shape();
      continue;
    }
    const Shape& s = n.t->shape();
    const std::size_t len = std::max(r.size(), s.size());
    Shape b(len, 1);
    for (std::size_t i = 0; i < len; ++i) {
      const std::int64_t x = i < len - r.size() ? 1 : r[i - (len - r.size())];
      const std::int64_t y = i < len - s.size() ? 1 : s[i - (len - s.size())];
      STRATA_CHECK(x == y || x == 1 || y == 1, op, n.name, " has shape ", shape_str(s),
                   " which does not broadcast with ", first->name, "'s ",
                   shape_str(first->t->shape()));
      b[i] = x == 1 ? y : x;
    }
    r = std::move(b);
  }
  return r;
}

void check_broadcasts_to(const char* op, const Tensor& t, const char* name, const Shape& shape) {
  STRATA_CHECK(broadcastable(t.shape(), shape), op, name, " has shape ", shape_str(t.shape()),
               " which does not broadcast to ", shape_str(shape));
}

IterArgs make_iter(const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  IterArgs it;
  // Fast path: every operand contiguous with out's shape is one flat dim.
  bool flat = out.is_contiguous();
  for (const Tensor* in : inputs)
    flat =
        flat && in != nullptr && in->defined() && in->shape() == out.shape() && in->is_contiguous();
  if (flat) {
    it.ndim = 1;
    it.shape[0] = out.numel();
    it.nops = 0;
    auto add = [&](const Tensor& t) {
      Operand o;
      o.data = t.data_ptr();
      o.dtype = t.dtype();
      o.rank = 1;
      o.shape[0] = it.shape[0];
      o.strides[0] = 1;
      it.op[it.nops++] = o;
    };
    add(out);
    for (const Tensor* in : inputs) add(*in);
    return it;
  }
  collect(it, out, inputs, 0);
  simplify(it, out.shape(), out.dim());
  return it;
}

IterArgs make_ordered_iter(const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  IterArgs it;
  // keep_last = every dim: collect() flips none.
  collect(it, out, inputs, out.dim());
  simplify(it, out.shape(), out.dim(), /*keep_order=*/true);
  return it;
}

IterArgs make_row_iter(const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  IterArgs it;
  it.row = true;
  const bool has_row = out.dim() >= 1;
  collect(it, out, inputs, has_row ? 1 : 0);
  if (!has_row) {  // a 0-d row op: one row of one element
    it.ndim = 1;
    it.shape[0] = 1;
    for (int o = 0; o < it.nops; ++o) {
      it.op[o].rank = 1;
      it.op[o].shape[0] = 1;
      it.op[o].strides[0] = 0;
    }
    return it;
  }
  simplify(it, out.shape(), out.dim() - 1);
  return it;
}

}  // namespace strata::detail
