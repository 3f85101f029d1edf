// embedding_backward front end: validate (table_grad [V, D] floating, grad
// [..., D] of its dtype, ids i32/i64 of grad's leading shape, one device, no
// overlap) and dispatch. IterArgs (row == true, not built by make_row_iter):
// op[0] = table_grad [V, D], op[1] = grad as rows [N, D], op[2] = ids [N];
// shape = {N, D} (docs/guide/ops.md). The kernel checks the ids' range.
#include "row_common.hpp"
#include "strata/embedding.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "embedding_backward";

// t with its leading dims as one: a view where the strides allow, else a copy.
Tensor flat_rows(const Tensor& t, const Shape& shape) {
  try {
    return t.reshape(shape);
  } catch (const Error&) {
    return t.reshape_copy(shape);
  }
}

}  // namespace

void embedding_backward_out(const Tensor& table_grad, const Tensor& grad, const Tensor& ids,
                            const OpOptions& opt) {
  static const OpId id = Registry::get().op_id(kOp);
  detail::check_embedding_table(kOp, table_grad, "table_grad");
  detail::check_defined(kOp, grad, "grad");
  detail::check_defined(kOp, ids, "ids");
  detail::check_dtype(kOp, grad, "grad", table_grad.dtype(), "table_grad");
  detail::check_integer(kOp, ids, "ids");
  Shape want = ids.shape();
  want.push_back(table_grad.size(1));
  STRATA_CHECK(grad.shape() == want, kOp, "grad has shape ", shape_str(grad.shape()),
               " but must be ", shape_str(want), " (ids' shape, then table_grad's D)");
  detail::check_same_device(kOp, {{&table_grad, "table_grad"}, {&grad, "grad"}, {&ids, "ids"}});
  STRATA_CHECK(!detail::has_internal_overlap(table_grad), kOp, "table_grad has strides ",
               shape_str(table_grad.strides()), " under which several elements share memory");
  detail::check_no_overlap(kOp, table_grad, "table_grad", {{&grad, "grad"}, {&ids, "ids"}});
  const BackendId be = detail::resolve_backend(kOp, opt.backend, table_grad.device());
  const std::int64_t n = ids.numel(), d = table_grad.size(1);
  if (n == 0 || d == 0) return;
  const Tensor g2 = flat_rows(grad, {n, d}), i1 = flat_rows(ids, {n});
  IterArgs it;
  it.row = true;
  it.ndim = 2;
  it.shape[0] = n;
  it.shape[1] = d;
  it.nops = 3;
  it.op[0] = table_grad.operand();
  it.op[1] = g2.operand();
  it.op[2] = i1.operand();
  it.stream = opt.stream;
  Registry::get().find(id, be, table_grad.dtype(), it).run(it);
}

}  // namespace strata
