// embedding front end: validate (ids i32/i64, table [V, D] floating, one
// device, the caller's out, overlap), allocate where the op owns the output
// and dispatch: op[0] = out [..., D], op[1] = ids with stride 0 along the
// row, side = table (docs/guide/ops.md). The kernel checks the ids' range.
#include "strata/embedding.hpp"

#include "row_common.hpp"
#include "strata/detail/autograd_record.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "embedding";

Shape check_inputs(const Tensor& ids, const Tensor& table) {
  detail::check_defined(kOp, ids, "ids");
  detail::check_integer(kOp, ids, "ids");
  detail::check_embedding_table(kOp, table, "table");
  STRATA_CHECK(ids.dim() < kMaxDims, kOp, "ids has ", ids.dim(), " dims; the output would have ",
               ids.dim() + 1, " but at most ", kMaxDims, " are supported");
  detail::check_same_device(kOp, {{&ids, "ids"}, {&table, "table"}});
  Shape s = ids.shape();
  s.push_back(table.size(1));
  return s;
}

void run(OpId id, const Tensor& out, const Tensor& ids, const Tensor& table, const OpOptions& opt) {
  const BackendId be = detail::resolve_backend(kOp, opt.backend, table.device());
  const Tensor idv = ids.unsqueeze(ids.dim()).expand(out.shape());
  IterArgs it = detail::make_row_iter(out, {&idv});
  it.side = table.operand();
  detail::run_row_kernel(id, be, table.dtype(), it, out, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape()) {
    autograd::detail::record(
        *tape, kOp, {&table}, {&out}, {ids},
        [shape = table.shape()](autograd::GradContext& c) {
          const Tensor& g = c.grad_out(0);
          // Straight into the table's gradient; through a sum where the
          // table is a broadcast view that cannot be written through.
          const Tensor into = c.grad_view(0);
          if (into.defined()) {
            embedding_backward_out(into, g, c.saved(0), c.options());
            return;
          }
          const Tensor t = Tensor::zeros(shape, g.dtype(), g.device());
          embedding_backward_out(t, g, c.saved(0), c.options());
          c.accumulate(0, t);
        },
        opt);
  }
}

OpId op_id() {
  static const OpId id = Registry::get().op_id(kOp);
  return id;
}

}  // namespace

// ids [...] (i32 or i64), table [V, D]  ->  out [..., D] (table's dtype)
Tensor embedding(const Tensor& ids, const Tensor& table, const OpOptions& opt) {
  const OpId id = op_id();
  const Shape shape = check_inputs(ids, table);
  detail::resolve_backend(kOp, opt.backend, table.device());
  Tensor out = Tensor::empty(shape, table.dtype(), table.device());
  run(id, out, ids, table, opt);
  return out;
}

void embedding_out(const Tensor& out, const Tensor& ids, const Tensor& table,
                   const OpOptions& opt) {
  const OpId id = op_id();
  detail::check_defined(kOp, out, "out");
  const Shape shape = check_inputs(ids, table);
  detail::check_output(kOp, out, "out", shape, table.dtype(), table.device(), "table");
  detail::check_no_overlap(kOp, out, "out", {{&ids, "ids"}, {&table, "table"}});
  run(id, out, ids, table, opt);
}

}  // namespace strata
