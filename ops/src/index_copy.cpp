// index_copy_ front end: validate (ranks and shapes, dtypes, index i32/i64
// and 1-D, one device, dst without self-overlap, src and index disjoint from
// dst) and dispatch one row op (docs/guide/ops.md, "IterArgs conventions"):
//
//   op[0] = dst with stride 0 at `dim`, expanded to src's shape (the row
//           element at index 0 of dim; the kernel adds index * iparam[0])
//   op[1] = src
//   op[2] = index, laid along `dim` and broadcast (stride 0) over the rest
//   side  = index as given ([T], its own stride): the kernels' range check
//           and the position named in its error
//   iparam[0] = dst.stride(dim), iparam[1] = dst.size(dim); key = dst's dtype
//
// Why IterArgs and not an args struct of its own: make_row_iter already does
// what a strided copy needs (stride-0 expansion, flips, dropping size-1 dims,
// merging outer dims every operand walks as one), and keeping src's last dim
// as the row gives the kernels unit-stride rows to copy with vector loads
// (the KV cache's head dim), as embedding's gather does. The index's walk
// along `dim` rides as a third operand, so the kernels need no rank loop of
// their own; when `dim` is the last dim the index varies along the row and
// the kernels read it per element.
//
// Backward (docs/guide/autograd.md): src's gradient is the output's gradient
// gathered at index along `dim`; dst's other elements pass theirs through,
// and the elements index overwrote get none.
#include "strata/index_copy.hpp"

#include <vector>

#include "row_common.hpp"
#include "strata/detail/autograd_record.hpp"
#include "strata/embedding.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "index_copy_";

OpId op_id() {
  static const OpId id = Registry::get().op_id("index_copy");
  return id;
}

// out[..., t, ...] = g[..., index[t], ...] along dim d: embedding's row
// gather on g laid out as a table [g.size(d), rest] (a copy of g unless its
// layout already is that table), then moved back.
Tensor gather_rows(const Tensor& g, int d, const Tensor& index, const OpOptions& opt) {
  std::vector<int> to_front{d}, back;
  for (int k = 0; k < g.dim(); ++k) {
    if (k != d) to_front.push_back(k);
    back.push_back(k < d ? k + 1 : k == d ? 0 : k);
  }
  const Tensor table = g.permute(to_front).contiguous();
  Shape rest(table.shape().begin() + 1, table.shape().end());
  const Tensor rows = embedding(index, table.reshape({table.size(0), shape_numel(rest)}), opt);
  rest.insert(rest.begin(), index.size(0));
  return rows.reshape(rest).permute(back);
}

void record_index_copy(autograd::TapeState& tape, const Tensor& dst, int d, const Tensor& index,
                       const Tensor& src, const OpOptions& opt) {
  // The index is cloned (T integers): a caller that rewrites its positions
  // buffer between steps (a decode loop) must not change this step's gradient.
  autograd::detail::record(
      tape, kOp, {&dst, &src}, {&dst}, {index.clone()},
      [d, src_shape = src.shape()](autograd::GradContext& c) {
        const Tensor& g = c.grad_out(0);
        const Tensor& idx = c.saved(0);
        const OpOptions& o = c.options();
        // Duplicate indices: each of their src rows gets the gradient (PyTorch's rule).
        if (c.needs(1) && shape_numel(src_shape) > 0) c.accumulate(1, gather_rows(g, d, idx, o));
        if (c.needs(0)) {
          // The tape zeroed dst's gradient (the op wrote dst); all but the
          // overwritten rows comes back.
          const Tensor kept = g.clone();
          index_copy_(kept, d, idx, Tensor::zeros(src_shape, g.dtype(), g.device()), o);
          c.accumulate(0, kept);
        }
      },
      opt);
}

}  // namespace

void index_copy_(const Tensor& dst, int dim, const Tensor& index, const Tensor& src,
                 const OpOptions& opt) {
  const OpId id = op_id();
  detail::check_defined(kOp, dst, "dst");
  detail::check_defined(kOp, index, "index");
  detail::check_defined(kOp, src, "src");
  detail::check_rank_at_least(kOp, dst, "dst", 1);
  const int d = detail::wrap_dim(kOp, dim, dst.dim(), "dim");
  detail::check_integer(kOp, index, "index");
  STRATA_CHECK(index.dim() == 1, kOp, "index has shape ", shape_str(index.shape()),
               " but must be 1-D [T]");
  detail::check_dtype(kOp, src, "src", dst.dtype(), "dst");
  const std::int64_t t = index.size(0);
  Shape want = dst.shape();
  want[static_cast<std::size_t>(d)] = t;
  STRATA_CHECK(src.shape() == want, kOp, "src has shape ", shape_str(src.shape()), " but must be ",
               shape_str(want), " (dst's shape with index's length ", t, " at dim ", d, ")");
  detail::check_same_device(kOp, {{&dst, "dst"}, {&index, "index"}, {&src, "src"}});
  STRATA_CHECK(!detail::has_internal_overlap(dst), kOp, "dst has strides ",
               shape_str(dst.strides()), " under which several elements share memory");
  detail::check_no_overlap(kOp, dst, "dst", {{&src, "src"}, {&index, "index"}});
  STRATA_CHECK(t == 0 || dst.size(d) > 0, kOp, "index has length ", t,
               " but dst has size 0 at dim ", d, " (no index is in range)");
  const BackendId be = detail::resolve_backend(kOp, opt.backend, dst.device());
  autograd::detail::refuse_write_to_watched(kOp, dst);

  // dst.size(d) is 0 only when T is too (src then has dst's shape).
  const Tensor dview = dst.size(d) > 0 ? dst.narrow(d, 0, 1).expand(src.shape()) : dst;
  Tensor iview = index;
  for (int k = 0; k < d; ++k) iview = iview.unsqueeze(0);
  for (int k = d + 1; k < dst.dim(); ++k) iview = iview.unsqueeze(iview.dim());
  iview = iview.expand(src.shape());
  IterArgs it = detail::make_row_iter(dview, {&src, &iview});
  it.side = index.operand();
  it.iparam[0] = dst.stride(d);
  it.iparam[1] = dst.size(d);
  detail::run_row_kernel(id, be, dst.dtype(), it, dview, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    record_index_copy(*tape, dst, d, index, src, opt);
}

}  // namespace strata
