// The backward of every elementwise op, written with the forward ops (and
// the activations' *_backward kernels): d/da of out = f(a, b, s) given
// g = d(loss)/d(out). Broadcasting is summed back by GradContext::accumulate.
#include "elementwise_grad.hpp"

#include <cmath>
#include <cstring>

#include "strata/elementwise.hpp"

namespace strata::detail {
namespace {

using autograd::GradContext;

// What a formula reads besides g: the inputs (by position) and the output.
enum Reads : unsigned { kNone = 0, kIn0 = 1, kIn1 = 2, kIn2 = 4, kOut = 8 };

struct Formula {
  const char* op;
  unsigned reads;
  // saved: the tensors named by `reads`, inputs first, the output last.
  void (*backward)(GradContext& c, const EwScalars& s);
};

const Tensor& g0(const GradContext& c) { return c.grad_out(0); }
Tensor zero_like(const Tensor& g) { return Tensor::zeros({}, g.dtype(), g.device()); }

// maximum (is_max) and minimum: g to the input that was selected, g/2 to each
// on a tie; an input gets nothing only where the other one won, so a NaN
// sends g to both (PyTorch's rule).
void min_max_backward(GradContext& c, bool is_max) {
  const OpOptions& o = c.options();
  const Tensor &g = g0(c), &a = c.saved(0), &b = c.saved(1);
  const Tensor zero = zero_like(g);
  const Tensor shared = where(eq(a, b, o), mul(g, 0.5, o), g, o);
  if (c.needs(0)) c.accumulate(0, where(is_max ? lt(a, b, o) : gt(a, b, o), zero, shared, o));
  if (c.needs(1)) c.accumulate(1, where(is_max ? lt(b, a, o) : gt(b, a, o), zero, shared, o));
}

// The activations whose backward is one kernel of (g, x) or (g, out).
template <Tensor (*Backward)(const Tensor&, const Tensor&, const OpOptions&)>
void via_kernel(GradContext& c, const EwScalars&) {
  c.accumulate(0, Backward(g0(c), c.saved(0), c.options()));
}

const Formula kFormulas[] = {
    {"add", kNone,
     [](GradContext& c, const EwScalars&) {
       c.accumulate(0, g0(c));
       c.accumulate(1, g0(c));
     }},
    {"sub", kNone,
     [](GradContext& c, const EwScalars&) {
       c.accumulate(0, g0(c));
       if (c.needs(1)) c.accumulate(1, neg(g0(c), c.options()));
     }},
    {"mul", kIn0 | kIn1,
     [](GradContext& c, const EwScalars&) {
       if (c.needs(0)) c.accumulate(0, mul(g0(c), c.saved(1), c.options()));
       if (c.needs(1)) c.accumulate(1, mul(g0(c), c.saved(0), c.options()));
     }},
    {"div", kIn0 | kIn1,
     [](GradContext& c, const EwScalars&) {
       const OpOptions& o = c.options();
       const Tensor ga = div(g0(c), c.saved(1), o);  // g / b
       c.accumulate(0, ga);
       // d(a/b)/db = -a/b^2 = -(g/b) (a/b)
       if (c.needs(1)) c.accumulate(1, neg(mul(ga, div(c.saved(0), c.saved(1), o), o), o));
     }},
    {"silu_mul", kIn0 | kIn1,
     [](GradContext& c, const EwScalars&) {
       // Written straight into the gradients where they are unwritten (the
       // halves of a fused gate_up), not into temporaries copied there.
       const OpOptions& o = c.options();
       if (c.needs(0)) {
         const Tensor t = silu_backward(g0(c), c.saved(0), o);  // silu'(a) g
         c.produce(0, [&](const Tensor& out) { mul_out(out, t, c.saved(1), o); });
       }
       if (c.needs(1))  // silu(a) g
         c.produce(1, [&](const Tensor& out) { silu_mul_out(out, c.saved(0), g0(c), o); });
     }},
    {"pow", kIn0 | kIn1 | kOut,  // out = x^y; PyTorch's values where x = 0 or y = 0
     [](GradContext& c, const EwScalars&) {
       const OpOptions& o = c.options();
       const Tensor &g = g0(c), &x = c.saved(0), &y = c.saved(1);
       const Tensor zero = zero_like(g);
       if (c.needs(0)) {  // y x^(y-1) g, 0 where y = 0 (not 0 * inf at x = 0)
         const Tensor dx = mul(mul(g, y, o), pow(x, sub(y, 1.0, o), o), o);
         c.accumulate(0, where(eq(y, 0.0, o), zero, dx, o));
       }
       if (c.needs(1)) {  // x^y log(x) g, 0 where x = 0 and y >= 0
         const Tensor dy = mul(g, mul(c.saved(2), log(x, o), o), o);
         c.accumulate(1, where(eq(x, 0.0, o), where(ge(y, 0.0, o), zero, dy, o), dy, o));
       }
     }},
    {"maximum", kIn0 | kIn1, [](GradContext& c, const EwScalars&) { min_max_backward(c, true); }},
    {"minimum", kIn0 | kIn1, [](GradContext& c, const EwScalars&) { min_max_backward(c, false); }},
    {"add_scalar", kNone, [](GradContext& c, const EwScalars&) { c.accumulate(0, g0(c)); }},
    {"sub_scalar", kNone, [](GradContext& c, const EwScalars&) { c.accumulate(0, g0(c)); }},
    {"rsub_scalar", kNone,
     [](GradContext& c, const EwScalars&) { c.accumulate(0, neg(g0(c), c.options())); }},
    {"mul_scalar", kNone,
     [](GradContext& c, const EwScalars& s) { c.accumulate(0, mul(g0(c), s[0], c.options())); }},
    {"div_scalar", kNone,
     [](GradContext& c, const EwScalars& s) { c.accumulate(0, div(g0(c), s[0], c.options())); }},
    {"rdiv_scalar", kIn0 | kOut,  // out = s / a: d/da = -s/a^2 = -out/a
     [](GradContext& c, const EwScalars&) {
       const OpOptions& o = c.options();
       c.accumulate(0, neg(div(mul(g0(c), c.saved(1), o), c.saved(0), o), o));
     }},
    {"pow_scalar", kIn0,  // p x^(p-1) g; nothing for p = 0 (not 0 * inf at x = 0)
     [](GradContext& c, const EwScalars& s) {
       if (s[0] == 0.0) return;
       const OpOptions& o = c.options();
       c.accumulate(0, mul(mul(g0(c), pow(c.saved(0), s[0] - 1.0, o), o), s[0], o));
     }},
    {"clamp", kIn0,  // g where lo <= x <= hi (the bounds pass it, as PyTorch); NaN x: 0
     [](GradContext& c, const EwScalars& s) {
       const OpOptions& o = c.options();
       Tensor g = g0(c);
       const Tensor zero = zero_like(g);
       if (!std::isnan(s[0])) g = where(ge(c.saved(0), s[0], o), g, zero, o);
       if (!std::isnan(s[1])) g = where(le(c.saved(0), s[1], o), g, zero, o);
       c.accumulate(0, g);
     }},
    {"neg", kNone,
     [](GradContext& c, const EwScalars&) { c.accumulate(0, neg(g0(c), c.options())); }},
    {"exp", kOut,
     [](GradContext& c, const EwScalars&) {
       c.accumulate(0, mul(g0(c), c.saved(0), c.options()));
     }},
    {"log", kIn0,
     [](GradContext& c, const EwScalars&) {
       c.accumulate(0, div(g0(c), c.saved(0), c.options()));
     }},
    {"sqrt", kOut,  // d sqrt(x) = 1 / (2 out)
     [](GradContext& c, const EwScalars&) {
       c.accumulate(0, div(mul(g0(c), 0.5, c.options()), c.saved(0), c.options()));
     }},
    {"rsqrt", kIn0 | kOut,  // d x^-1/2 = -out / (2 x)
     [](GradContext& c, const EwScalars&) {
       const OpOptions& o = c.options();
       c.accumulate(0, mul(div(mul(g0(c), c.saved(1), o), c.saved(0), o), -0.5, o));
     }},
    {"tanh", kOut, &via_kernel<tanh_backward>},
    {"sigmoid", kOut, &via_kernel<sigmoid_backward>},
    {"relu", kIn0, &via_kernel<relu_backward>},
    {"gelu", kIn0, &via_kernel<gelu_backward>},
    {"gelu_tanh", kIn0, &via_kernel<gelu_tanh_backward>},
    {"silu", kIn0, &via_kernel<silu_backward>},
    {"abs", kIn0, &via_kernel<abs_backward>},
    {"where", kIn0,  // inputs: cond, a, b
     [](GradContext& c, const EwScalars&) {
       const Tensor& g = g0(c);
       const Tensor zero = zero_like(g);
       if (c.needs(1)) c.accumulate(1, where(c.saved(0), g, zero, c.options()));
       if (c.needs(2)) c.accumulate(2, where(c.saved(0), zero, g, c.options()));
     }},
    // cast and copy_: the gradient is cast back by accumulate.
    {"cast", kNone, [](GradContext& c, const EwScalars&) { c.accumulate(0, g0(c)); }},
    {"copy_", kNone, [](GradContext& c, const EwScalars&) { c.accumulate(0, g0(c)); }},
    // fill_ reads nothing: it only overwrites (the tape zeroes that memory's gradient).
    {"fill_", kNone, [](GradContext&, const EwScalars&) {}},
};

const Formula* find_formula(const char* op) {
  for (const Formula& f : kFormulas)
    if (std::strcmp(f.op, op) == 0) return &f;
  return nullptr;
}

}  // namespace

void check_elementwise_in_place(const char* op, const Tensor& out,
                                std::initializer_list<Named> ins) {
  autograd::detail::refuse_write_to_watched(op, out);
  const Formula* f = find_formula(op);
  if (f == nullptr) return;  // refused after the run, before anything records
  unsigned bit = kIn0;
  for (const Named& n : ins) {
    STRATA_CHECK(!((f->reads & bit) && may_overlap(out, *n.t)), op, "out overwrites ", n.name,
                 ", which the backward reads, while a tape records; write into another tensor");
    bit <<= 1;
  }
}

void record_elementwise(autograd::TapeState& tape, const char* op, const EwScalars& scalars,
                        const Tensor& out, std::initializer_list<Named> ins, const OpOptions& opt) {
  const Named* n = ins.begin();
  const Formula* f = find_formula(op);
  if (f == nullptr) {  // the *_backward ops themselves: no second derivative
    for (const Named& x : ins) autograd::detail::refuse_gradient(op, {x.t});
    return;
  }
  std::vector<Tensor> saved;
  unsigned bit = kIn0;
  for (const Named& x : ins) {
    if (f->reads & bit) saved.push_back(*x.t);
    bit <<= 1;
  }
  if (f->reads & kOut) saved.push_back(out);
  auto backward = [fn = f->backward, scalars](GradContext& c) { fn(c, scalars); };
  switch (ins.size()) {
    case 0:
      autograd::detail::record(tape, op, {}, {&out}, {}, nullptr, opt);
      return;
    case 1:
      autograd::detail::record(tape, op, {n[0].t}, {&out}, std::move(saved), backward, opt);
      return;
    case 2:
      autograd::detail::record(tape, op, {n[0].t, n[1].t}, {&out}, std::move(saved), backward, opt);
      return;
    default:
      autograd::detail::record(tape, op, {n[0].t, n[1].t, n[2].t}, {&out}, std::move(saved),
                               backward, opt);
  }
}

}  // namespace strata::detail
