// sum_of_squares front end: validate every entry of the list (defined, one
// floating dtype, one device, contiguous) before anything runs, then hand
// the kernel one SumOfSquaresArgs with a table of the tensors' addresses and
// a 0-d f64 output on their device. No maths here.
#include <cstdint>
#include <vector>

#include "strata/detail/op_checks.hpp"
#include "strata/optim_args.hpp"
#include "strata/optim_ops.hpp"

namespace strata {

Tensor sum_of_squares(const std::vector<Tensor>& tensors, const OpOptions& opt) {
  constexpr const char* op = "sum_of_squares";
  static const OpId id = Registry::get().op_id(op);
  if (tensors.empty()) return Tensor::zeros({}, DType::f64);
  STRATA_CHECK(tensors.size() < (std::size_t{1} << 30), op, "tensors has ", tensors.size(),
               " tensors, too many for one call");
  STRATA_CHECK(tensors[0].defined(), op, "tensors[0] is undefined");
  const DType dt = tensors[0].dtype();
  const Device dev = tensors[0].device();
  STRATA_CHECK(dt == DType::f32 || dt == DType::f64 || dt == DType::f16 || dt == DType::bf16, op,
               "tensors[0] is ", dtype_name(dt), " but must be f32, f64, f16 or bf16");
  std::vector<SquaresTensor> table(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    STRATA_CHECK(t.defined(), op, "tensors[", i, "] is undefined");
    STRATA_CHECK(t.dtype() == dt, op, "tensors[", i, "] is ", dtype_name(t.dtype()),
                 " but tensors[0] is ", dtype_name(dt), " (one dtype per call)");
    STRATA_CHECK(t.device() == dev, op, "tensors[", i, "] is on ", t.device().str(),
                 " but tensors[0] is on ", dev.str());
    STRATA_CHECK(t.is_contiguous(), op, "tensors[", i, "] is not contiguous (strides ",
                 shape_str(t.strides()), ")");
    table[i] = {t.data_ptr(), t.numel()};
  }
  const BackendId be = detail::resolve_backend(op, opt.backend, dev);
  Tensor out = Tensor::empty({}, DType::f64, dev);
  SumOfSquaresArgs a;
  a.count = static_cast<int>(tensors.size());
  a.tensors = table.data();
  a.dtype = dt;
  a.out = out.data_ptr();
  a.stream = opt.stream;
  Registry::get().find(id, be, dt, a).run(a);
  return out;
}

}  // namespace strata
