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
#include "strata/index_copy.hpp"

#include "row_common.hpp"
#include "strata/detail/autograd_record.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "index_copy_";

OpId op_id() {
  static const OpId id = Registry::get().op_id("index_copy");
  return id;
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
  autograd::detail::refuse_gradient(kOp, {&dst, &src});  // no backward yet

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
}

}  // namespace strata
