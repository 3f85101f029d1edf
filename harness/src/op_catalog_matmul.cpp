// Descriptors of matmul and linear: plain, broadcast batch dims, 1-D
// operands on either side, linear with and without bias, and accumulate
// (out += a b + bias: the output, poisoned by the runner, first gets the
// values of an input "c" by copy_, so the kernel's read of out's own values
// is checked on every output layout). Rounding errors grow with K (the
// bound's growth).
#include "op_catalog.hpp"
#include "strata/elementwise.hpp"
#include "strata/matmul.hpp"

namespace strata::harness::detail {
namespace {

MatmulOptions mm(const OpOptions& o, bool accumulate = false) {
  MatmulOptions m;
  m.backend = o.backend;
  m.stream = o.stream;
  m.accumulate = accumulate;
  return m;  // precision highest: f32 products exact on every backend
}

OpDescriptor matmul_desc(std::string name, Shape a, Shape b, Shape out, std::int64_t K) {
  OpDescriptor d = descriptor(std::move(name), "matmul", "matmul");
  d.inputs = {input("a", std::move(a)), input("b", std::move(b))};
  d.output = [out](const std::vector<Tensor>&, DType dt) { return OpOutput{out, dt}; };
  d.run = [](const Tensor& o, const std::vector<Tensor>& in, const OpOptions& opt) {
    matmul_out(o, in[0], in[1], mm(opt));
  };
  d.tolerance = [K](DType) { return Tolerance{4, 4, static_cast<double>(K)}; };
  return d;
}

}  // namespace

void add_matmul_descriptors(std::vector<OpDescriptor>& v) {
  v.push_back(matmul_desc("matmul", {5, 33}, {33, 7}, {5, 7}, 33));
  v.push_back(matmul_desc("matmul (batch broadcast)", {2, 1, 5, 17}, {3, 17, 6}, {2, 3, 5, 6}, 17));
  v.push_back(matmul_desc("matmul (1-D a)", {17}, {2, 17, 6}, {2, 6}, 17));
  v.push_back(matmul_desc("matmul (1-D b)", {3, 5, 17}, {17}, {3, 5}, 17));
  for (const bool bias : {true, false}) {
    OpDescriptor d = descriptor(bias ? "linear" : "linear (no bias)", "matmul", "matmul");
    d.inputs = {input("x", {2, 5, 24}), input("weight", {10, 24})};
    if (bias) d.inputs.push_back(input("bias", {10}));
    d.output = [](const std::vector<Tensor>&, DType dt) { return OpOutput{{2, 5, 10}, dt}; };
    d.run = [bias](const Tensor& y, const std::vector<Tensor>& in, const OpOptions& opt) {
      linear_out(y, in[0], in[1], bias ? in[2] : Tensor(), mm(opt));
    };
    d.tolerance = [](DType) { return Tolerance{4, 4, 25}; };
    v.push_back(d);
  }
  {
    OpDescriptor d = matmul_desc("matmul (accumulate)", {2, 5, 17}, {17, 6}, {2, 5, 6}, 17);
    d.inputs.push_back(input("c", {2, 5, 6}));
    d.run = [](const Tensor& o, const std::vector<Tensor>& in, const OpOptions& opt) {
      copy_(o, in[2], opt);
      matmul_out(o, in[0], in[1], mm(opt, true));
    };
    v.push_back(d);
  }
  {
    OpDescriptor d = descriptor("linear (accumulate, bias)", "matmul", "matmul");
    d.inputs = {input("x", {2, 5, 24}), input("weight", {10, 24}), input("bias", {10}),
                input("c", {2, 5, 10})};
    d.output = [](const std::vector<Tensor>&, DType dt) { return OpOutput{{2, 5, 10}, dt}; };
    d.run = [](const Tensor& y, const std::vector<Tensor>& in, const OpOptions& opt) {
      copy_(y, in[3], opt);
      linear_out(y, in[0], in[1], in[2], mm(opt, true));
    };
    d.tolerance = [](DType) { return Tolerance{4, 4, 25}; };
    v.push_back(d);
  }
}

}  // namespace strata::harness::detail
