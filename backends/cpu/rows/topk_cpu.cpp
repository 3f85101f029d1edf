// cpu topk (operands: docs/guide/ops.md, "IterArgs conventions"): per row,
// every element's order key (common/select_functors.hpp: NaN above every
// number, -0 == +0) and position in a per-thread buffer, std::partial_sort
// of the first k by (key descending, position ascending) -- a strict total
// order, so ties go to the lower index on every run -- then the values
// copied from x at the chosen positions. Rows over OpenMP threads
// (row_engine.hpp).
#include <algorithm>
#include <cstdint>

#include "common/select_functors.hpp"
#include "cpu/rows/row_engine.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
namespace {

struct Ranked {
  std::uint64_t key;
  std::int64_t pos;
};

template <class T>
void topk_kernel(const IterArgs& a) {
  const int last = a.ndim - 1;
  const std::int64_t n = a.iparam[0], k = a.shape[last];
  const bool largest = a.iparam[1] != 0;
  const std::int64_t sv = a.op[0].strides[last], si = a.op[1].strides[last],
                     sx = a.op[2].strides[last];
  // for_rows sizes its thread team by rows x row length: the row read is
  // x's (n), not the outputs' (k). Only that count differs.
  IterArgs w = a;
  w.shape[last] = n;
  rows::for_rows<Ranked>(w, "topk", n, [&](const std::int64_t* off, Ranked* buf) {
    const T* x = rows::at<const T>(a.op[2], off[2]);
    for (std::int64_t j = 0; j < n; ++j)
      buf[j] = {fn::topk_key(convert<double>(x[j * sx]), largest), j};
    std::partial_sort(buf, buf + k, buf + n, [](const Ranked& p, const Ranked& q) {
      return p.key > q.key || (p.key == q.key && p.pos < q.pos);
    });
    T* v = rows::at<T>(a.op[0], off[0]);
    std::int64_t* ix = rows::at<std::int64_t>(a.op[1], off[1]);
    for (std::int64_t j = 0; j < k; ++j) {
      v[j * sv] = x[buf[j].pos * sx];
      ix[j * si] = buf[j].pos;
    }
  });
}

}  // namespace

void register_cpu_topk(Registry& r) {
  r.add_kernel<IterArgs>("topk", "cpu", DType::f32, "cpu.rows.topk", &topk_kernel<float>);
  r.add_kernel<IterArgs>("topk", "cpu", DType::f64, "cpu.rows.topk", &topk_kernel<double>);
  r.add_kernel<IterArgs>("topk", "cpu", DType::f16, "cpu.rows.topk", &topk_kernel<half>);
  r.add_kernel<IterArgs>("topk", "cpu", DType::bf16, "cpu.rows.topk", &topk_kernel<bfloat16>);
}

}  // namespace strata::cpu
