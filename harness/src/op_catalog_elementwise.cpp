// Descriptors of the elementwise ops: binary (same shape and broadcasting),
// the scalar forms and clamp, every unary op, the comparisons, where,
// cast/copy_ between dtype pairs, fill_.
#include <optional>

#include "op_catalog.hpp"
#include "strata/elementwise.hpp"

namespace strata::harness::detail {
namespace {

using BinaryOut = void (*)(const Tensor&, const Tensor&, const Tensor&, const OpOptions&);
using ScalarOut = void (*)(const Tensor&, const Tensor&, double, const OpOptions&);
using UnaryOut = void (*)(const Tensor&, const Tensor&, const OpOptions&);

OpOutput broadcast_out(const std::vector<Tensor>& in, DType dt) {
  Shape s = in.at(0).shape();
  for (std::size_t i = 1; i < in.size(); ++i) s = broadcast_shapes(s, in[i].shape(), "harness");
  return {s, dt};
}

// The run of every cast descriptor: copy_ converts to the output's dtype.
void run_copy(const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
  copy_(out, in[0], o);
}

}  // namespace

void add_elementwise_descriptors(std::vector<OpDescriptor>& v) {
  // pow's base positive (a non-integer power of a negative is NaN); maximum
  // and minimum on normal values, so that no two inputs tie (a tie is a
  // kink: finite differences would straddle it; the tie rule has its test).
  const struct {
    const char* name;
    BinaryOut fn;
    Fill fa, fb;
  } binaries[] = {{"add", &add_out, Fill::normal, Fill::normal},
                  {"sub", &sub_out, Fill::normal, Fill::normal},
                  {"mul", &mul_out, Fill::normal, Fill::normal},
                  {"div", &div_out, Fill::normal, Fill::nonzero},
                  {"silu_mul", &silu_mul_out, Fill::normal, Fill::normal},
                  {"pow", &pow_out, Fill::positive, Fill::normal},
                  {"maximum", &maximum_out, Fill::normal, Fill::normal},
                  {"minimum", &minimum_out, Fill::normal, Fill::normal}};
  for (const auto& b : binaries) {
    const Fill af = b.fa, bf = b.fb;
    const BinaryOut fn = b.fn;
    OpDescriptor same = descriptor(b.name, "binary", b.name);
    same.inputs = {input("a", {5, 9}, af), input("b", {5, 9}, bf)};
    same.run = [fn](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      fn(out, in[0], in[1], o);
    };
    v.push_back(same);
    OpDescriptor bc = same;
    bc.name = std::string(b.name) + " (broadcast)";
    bc.inputs = {input("a", {3, 1, 6}, af), input("b", {4, 6}, bf)};
    bc.output = broadcast_out;
    v.push_back(bc);
  }

  {
    // empty tensors: nothing to write, nothing may be written
    OpDescriptor d = descriptor("add (empty)", "binary", "add");
    d.inputs = {input("a", {4, 0, 3}), input("b", {1, 3})};
    d.output = broadcast_out;
    d.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      add_out(out, in[0], in[1], o);
    };
    v.push_back(d);
  }

  const struct {
    const char* name;
    const char* reg;
    ScalarOut fn;
    Fill fill;
    double s;
  } scalars[] = {
      {"add_scalar", "add_scalar", &add_out, Fill::normal, 1.75},
      {"sub_scalar", "sub_scalar", &sub_out, Fill::normal, 1.75},
      {"rsub_scalar", "rsub_scalar", &rsub_out, Fill::normal, 1.75},
      {"mul_scalar", "mul_scalar", &mul_out, Fill::normal, 1.75},
      {"div_scalar", "div_scalar", &div_out, Fill::normal, 1.75},
      {"rdiv_scalar", "rdiv_scalar", &rdiv_out, Fill::nonzero, 1.75},
      {"pow_scalar", "pow_scalar", &pow_out, Fill::positive, 1.75},
      {"pow_scalar (integer power of any sign)", "pow_scalar", &pow_out, Fill::normal, 3}};
  for (const auto& s : scalars) {
    const ScalarOut fn = s.fn;
    const double value = s.s;
    OpDescriptor d = descriptor(s.name, "scalar", s.reg);
    d.inputs = {input("a", {3, 5, 7}, s.fill)};
    d.run = [fn, value](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      fn(out, in[0], value, o);
    };
    v.push_back(d);
  }
  // clamp: both bounds, either alone, and lo > hi (hi everywhere, no
  // gradient). Normal values: finite differences stay off the bounds.
  const struct {
    const char* name;
    std::optional<double> lo, hi;
  } clamps[] = {{"clamp", -0.5, 0.75},
                {"clamp (lo only)", -0.5, std::nullopt},
                {"clamp (hi only)", std::nullopt, 0.75},
                {"clamp (lo > hi)", 0.75, -0.5}};
  for (const auto& c : clamps) {
    const std::optional<double> lo = c.lo, hi = c.hi;
    OpDescriptor d = descriptor(c.name, "scalar", "clamp");
    d.inputs = {input("x", {3, 5, 7})};
    d.run = [lo, hi](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      clamp_out(out, in[0], lo, hi, o);
    };
    v.push_back(d);
  }

  const struct {
    const char* name;
    UnaryOut fn;
    Fill fill;
  } unaries[] = {
      {"neg", &neg_out, Fill::normal},         {"exp", &exp_out, Fill::normal},
      {"log", &log_out, Fill::positive},       {"sqrt", &sqrt_out, Fill::positive},
      {"rsqrt", &rsqrt_out, Fill::positive},   {"tanh", &tanh_out, Fill::normal},
      {"sigmoid", &sigmoid_out, Fill::normal}, {"relu", &relu_out, Fill::normal},
      {"gelu", &gelu_out, Fill::normal},       {"gelu_tanh", &gelu_tanh_out, Fill::normal},
      {"silu", &silu_out, Fill::normal},       {"abs", &abs_out, Fill::nonzero}};
  for (const auto& u : unaries) {
    const UnaryOut fn = u.fn;
    OpDescriptor d = descriptor(u.name, "unary", u.name);
    d.inputs = {input("x", {3, 5, 7}, u.fill)};
    d.run = [fn](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      fn(out, in[0], o);
    };
    v.push_back(d);
  }

  // The activations' backward: (grad, x) -> grad f'(x) (sigmoid and tanh take y).
  const struct {
    const char* name;
    BinaryOut fn;
  } backwards[] = {{"relu_backward", &relu_backward_out},
                   {"gelu_backward", &gelu_backward_out},
                   {"gelu_tanh_backward", &gelu_tanh_backward_out},
                   {"silu_backward", &silu_backward_out},
                   {"sigmoid_backward", &sigmoid_backward_out},
                   {"tanh_backward", &tanh_backward_out},
                   {"abs_backward", &abs_backward_out}};
  for (const auto& b : backwards) {
    const BinaryOut fn = b.fn;
    OpDescriptor d = descriptor(b.name, "activation backward", b.name);
    d.inputs = {input("grad", {3, 5, 7}), input("x", {3, 5, 7})};
    d.run = [fn](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      fn(out, in[0], in[1], o);
    };
    v.push_back(d);
  }

  // Comparisons on every dtype, bool out: values on a grid of halves, so that
  // ties (and equality with the scalar 0.5, exact in every dtype) occur.
  const struct {
    const char* name;
    BinaryOut fn;
    ScalarOut fn_s;
  } comparisons[] = {{"gt", &gt_out, &gt_out}, {"ge", &ge_out, &ge_out}, {"lt", &lt_out, &lt_out},
                     {"le", &le_out, &le_out}, {"eq", &eq_out, &eq_out}, {"ne", &ne_out, &ne_out}};
  for (const auto& c : comparisons) {
    const BinaryOut fn = c.fn;
    const ScalarOut fn_s = c.fn_s;
    OpDescriptor d = descriptor(std::string(c.name) + " (broadcast)", "compare", c.name);
    d.dtypes = every_dtype();
    d.inputs = {input("a", {3, 1, 6}, Fill::ties), input("b", {4, 6}, Fill::ties)};
    d.output = [](const std::vector<Tensor>& in, DType) {
      return broadcast_out(in, DType::boolean);
    };
    d.run = [fn](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      fn(out, in[0], in[1], o);
    };
    v.push_back(d);
    OpDescriptor s =
        descriptor(std::string(c.name) + "_scalar", "compare", std::string(c.name) + "_scalar");
    s.dtypes = every_dtype();
    s.inputs = {input("a", {3, 5, 7}, Fill::ties)};
    s.output = [](const std::vector<Tensor>& in, DType) {
      return OpOutput{in[0].shape(), DType::boolean};
    };
    s.run = [fn_s](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      fn_s(out, in[0], 0.5, o);
    };
    v.push_back(s);
  }

  {
    OpDescriptor d = descriptor("where (broadcast)", "where", "where");
    d.dtypes = every_dtype();
    d.inputs = {input_of("cond", {5, 7}, DType::boolean, Fill::boolean), input("a", {3, 5, 7}),
                input("b", {3, 1, 7})};
    d.output = broadcast_out;
    d.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      where_out(out, in[0], in[1], in[2], o);
    };
    v.push_back(d);
  }

  // cast: every floating dtype to every dtype, and i32/i64/bool to every floating dtype.
  for (const DType to : every_dtype()) {
    OpDescriptor d = descriptor("cast to " + std::string(dtype_name(to)), "cast", "cast");
    d.inputs = {input("x", {4, 9})};
    d.output = [to](const std::vector<Tensor>& in, DType) { return OpOutput{in[0].shape(), to}; };
    d.run = run_copy;
    v.push_back(d);
  }
  for (const DType from : {DType::i32, DType::i64, DType::boolean}) {
    OpDescriptor d = descriptor("cast from " + std::string(dtype_name(from)), "cast", "cast");
    d.inputs = {input_of("x", {4, 9}, from, from == DType::boolean ? Fill::boolean : Fill::normal)};
    d.run = run_copy;
    v.push_back(d);
  }
  {
    OpDescriptor d = descriptor("copy_ (broadcast src)", "cast", "cast");
    d.dtypes = every_dtype();
    d.inputs = {input("src", {5, 1})};
    d.output = [](const std::vector<Tensor>&, DType dt) { return OpOutput{{3, 5, 7}, dt}; };
    d.run = run_copy;
    v.push_back(d);
  }
  {
    OpDescriptor d = descriptor("fill_", "fill", "fill");
    d.dtypes = every_dtype();
    d.output = [](const std::vector<Tensor>&, DType dt) { return OpOutput{{3, 5, 7}, dt}; };
    d.run = [](const Tensor& out, const std::vector<Tensor>&, const OpOptions& o) {
      fill_(out, 2.75, o);
    };
    v.push_back(d);
  }
}

}  // namespace strata::harness::detail
