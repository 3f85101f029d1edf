// Descriptors of the row ops' backward kernels, family "row backward":
// softmax_backward and log_softmax_backward over a middle dim and the last,
// layer_norm_backward and rms_norm_backward with each of dx, dweight and
// dbias as the checked output (autograd's gradient runner checks that they
// refuse a second derivative).
#include "op_catalog.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"

namespace strata::harness::detail {
namespace {

using SoftmaxBackwardOut = void (*)(const Tensor&, const Tensor&, const Tensor&, int,
                                    const OpOptions&);

}  // namespace

void add_row_backward_descriptors(std::vector<OpDescriptor>& v) {
  const Shape xs = {4, 6, 33};
  for (const bool log : {false, true})
    for (const int dim : {1, -1}) {
      const SoftmaxBackwardOut fn = log ? &log_softmax_backward_out : &softmax_backward_out;
      const std::string name = log ? "log_softmax_backward" : "softmax_backward";
      OpDescriptor d = descriptor(name + " dim=" + std::to_string(dim), "row backward", name);
      d.inputs = {input("grad", xs), input("y", xs)};
      d.run = [fn, dim](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
        fn(out, in[0], in[1], dim, o);
      };
      d.tolerance = row_growth(static_cast<double>(xs[dim < 0 ? 2 : dim]));
      v.push_back(d);
    }
  // The norms: which output the case checks (dx, dweight, dbias), with and
  // without a weight; small rows, many rows (several cpu chunks and
  // threads; on cuda several rows per block, more than one pass of
  // blocks), rows of 4096 (a block per row) and rows of several tiles.
  enum class Out { dx, dweight, dbias };
  const struct {
    const char* name;
    bool layer, weight;
    Out out;
    Shape shape;
  } norms[] = {
      {"layer_norm_backward dx", true, true, Out::dx, {4, 5, 48}},
      {"layer_norm_backward dx (no weight)", true, false, Out::dx, {4, 5, 48}},
      {"layer_norm_backward dweight", true, true, Out::dweight, {4, 5, 48}},
      {"layer_norm_backward dbias", true, false, Out::dbias, {4, 5, 48}},
      {"layer_norm_backward dweight (many rows)", true, true, Out::dweight, {300, 136}},
      {"rms_norm_backward dx", false, true, Out::dx, {4, 5, 48}},
      {"rms_norm_backward dx (no weight)", false, false, Out::dx, {4, 5, 48}},
      {"rms_norm_backward dweight", false, true, Out::dweight, {4, 5, 48}},
      {"rms_norm_backward dx (many rows)", false, true, Out::dx, {300, 130}},
      {"rms_norm_backward dweight (more rows than one pass of blocks)",
       false,
       true,
       Out::dweight,
       {4500, 64}},
      {"layer_norm_backward dx (rows of 4096)", true, true, Out::dx, {3, 4096}},
      {"layer_norm_backward dweight (rows of 4096)", true, true, Out::dweight, {3, 4096}},
      {"layer_norm_backward dx (long rows)", true, true, Out::dx, {3, 8201}},
      {"layer_norm_backward dweight (long rows)", true, true, Out::dweight, {3, 8201}},
      {"rms_norm_backward dx (long rows)", false, true, Out::dx, {3, 8201}},
  };
  for (const auto& c : norms) {
    const std::int64_t n = c.shape.back(), rows = shape_numel(c.shape) / n;
    OpDescriptor d =
        descriptor(c.name, "row backward", c.layer ? "layer_norm_backward" : "rms_norm_backward");
    d.inputs = {input("grad", c.shape), input("x", c.shape)};
    if (c.weight) d.inputs.push_back(input("weight", {n}));
    const Out out = c.out;
    if (out != Out::dx)
      d.output = [n](const std::vector<Tensor>&, DType dt) { return OpOutput{{n}, dt}; };
    d.run = [layer = c.layer, out](const Tensor& o, const std::vector<Tensor>& in,
                                   const OpOptions& opt) {
      const Tensor w = in.size() > 2 ? in[2] : Tensor();
      const Tensor dx = out == Out::dx ? o : Tensor(), dw = out == Out::dweight ? o : Tensor();
      if (layer)
        layer_norm_backward_out(dx, dw, out == Out::dbias ? o : Tensor(), in[0], in[1], w, 1e-5,
                                opt);
      else
        rms_norm_backward_out(dx, dw, in[0], in[1], w, 1e-6, opt);
    };
    // dweight and dbias sum over rows what each row computed over n.
    d.tolerance = row_growth(static_cast<double>(out == Out::dx ? n : n + rows));
    v.push_back(d);
  }
  // Rows that fit the registers on cuda (4096), and rows of several tiles.
  for (const std::int64_t n : {4096, 8201}) {
    OpDescriptor s = descriptor(
        std::string("softmax_backward dim=-1 (") + (n == 4096 ? "rows of 4096)" : "long rows)"),
        "row backward", "softmax_backward");
    s.inputs = {input("grad", {3, n}), input("y", {3, n})};
    s.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      softmax_backward_out(out, in[0], in[1], -1, o);
    };
    s.tolerance = row_growth(static_cast<double>(n));
    v.push_back(s);
  }
}

}  // namespace strata::harness::detail
