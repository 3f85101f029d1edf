// concat front end: validate every input (defined, one dtype, one device,
// one rank, equal sizes off `dim`) and the caller's out, then one copy_ per
// input into a narrow view of the output. No kernel of its own.
#include "strata/concat.hpp"

#include <string>

#include "strata/detail/op_checks.hpp"
#include "strata/elementwise.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "concat";

// Returns the output's shape; *d is the wrapped dim.
Shape check_inputs(const std::vector<Tensor>& xs, int dim, int* d) {
  STRATA_CHECK(!xs.empty(), kOp, "xs is empty; concat needs at least one tensor");
  for (std::size_t i = 0; i < xs.size(); ++i)
    STRATA_CHECK(xs[i].defined(), kOp, "xs[", i, "] is an undefined tensor");
  const Tensor& x0 = xs[0];
  STRATA_CHECK(x0.dim() > 0, kOp, "xs[0] is 0-d; a 0-d tensor cannot be concatenated");
  *d = detail::wrap_dim(kOp, dim, x0.dim(), "dim");
  Shape shape = x0.shape();
  shape[*d] = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    STRATA_CHECK(x.dtype() == x0.dtype(), kOp, "xs[", i, "] has dtype ", dtype_name(x.dtype()),
                 " but xs[0] has ", dtype_name(x0.dtype()));
    STRATA_CHECK(x.device() == x0.device(), kOp, "xs[", i, "] is on ", x.device().str(),
                 " but xs[0] is on ", x0.device().str());
    bool same = x.dim() == x0.dim();
    for (int k = 0; same && k < x.dim(); ++k) same = k == *d || x.size(k) == x0.size(k);
    STRATA_CHECK(same, kOp, "xs[", i, "] has shape ", shape_str(x.shape()), " but xs[0] has ",
                 shape_str(x0.shape()), "; they may differ only in dim ", *d);
    shape[*d] += x.size(*d);
  }
  return shape;
}

void copy_all(const Tensor& out, const std::vector<Tensor>& xs, int d, const OpOptions& opt) {
  std::int64_t at = 0;
  for (const Tensor& x : xs) {
    copy_(out.narrow(d, at, x.size(d)), x, opt);
    at += x.size(d);
  }
}

}  // namespace

// xs[i] [..., n_i, ...]  ->  out [..., sum n_i, ...]
Tensor concat(const std::vector<Tensor>& xs, int dim, const OpOptions& opt) {
  int d = 0;
  const Shape shape = check_inputs(xs, dim, &d);
  detail::resolve_backend(kOp, opt.backend, xs[0].device());
  Tensor out = Tensor::empty(shape, xs[0].dtype(), xs[0].device());
  copy_all(out, xs, d, opt);
  return out;
}

void concat_out(const Tensor& out, const std::vector<Tensor>& xs, int dim, const OpOptions& opt) {
  detail::check_defined(kOp, out, "out");
  int d = 0;
  const Shape shape = check_inputs(xs, dim, &d);
  detail::check_output(kOp, out, "out", shape, xs[0].dtype(), xs[0].device(), "xs[0]");
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const std::string name = "xs[" + std::to_string(i) + "]";
    detail::check_no_overlap(kOp, out, "out", {{&xs[i], name.c_str()}});
  }
  detail::resolve_backend(kOp, opt.backend, out.device());
  copy_all(out, xs, d, opt);
}

}  // namespace strata
