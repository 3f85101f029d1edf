// Elementwise front ends: validate (shapes broadcast, dtypes, devices,
// overlap), allocate the output where the op owns it, build IterArgs and
// dispatch through the registry. No maths here.
#include "strata/elementwise.hpp"

#include <cmath>
#include <limits>
#include <string_view>

#include "elementwise_grad.hpp"
#include "strata/detail/iter.hpp"
#include "strata/detail/op_checks.hpp"

namespace strata {
namespace {

using detail::Named;

enum class DTypeRule {
  floating,  // every input one floating dtype; out the same
  any_same,  // every input one dtype (where: a and b; cond is bool); out the same
  convert,   // out's dtype is the caller's; inputs any dtype (cast, copy_)
  compare,   // every input one dtype (any); out bool; keyed by the inputs' dtype; no gradient
};

struct Call {
  const char* op;  // registry and message name
  DTypeRule rule = DTypeRule::floating;
  double scalar = 0, scalar2 = 0;  // IterArgs::scalar[0], [1]
};

OpId op_id_of(const char* op) {
  // One lookup per op name per process; the ids are stable once filled.
  return Registry::get().op_id(op);
}

// Checks the inputs; returns the output's shape and dtype key.
std::pair<Shape, DType> check_inputs(const Call& c, std::initializer_list<Named> ins,
                                     DType out_dt) {
  for (const Named& n : ins) detail::check_defined(c.op, *n.t, n.name);
  const Named* data_in = ins.begin();
  if (c.rule == DTypeRule::any_same && ins.size() == 3) {  // where(cond, a, b)
    STRATA_CHECK(ins.begin()->t->dtype() == DType::boolean, c.op, "cond has dtype ",
                 dtype_name(ins.begin()->t->dtype()), " but must be bool");
    data_in = ins.begin() + 1;
  }
  if (c.rule == DTypeRule::floating) detail::check_floating(c.op, *data_in->t, data_in->name);
  if (c.rule != DTypeRule::convert) {
    for (const Named* n = data_in + 1; n != ins.end(); ++n)
      detail::check_dtype(c.op, *n->t, n->name, data_in->t->dtype(), data_in->name);
    out_dt = c.rule == DTypeRule::compare ? DType::boolean : data_in->t->dtype();
  }
  return {detail::broadcast_all(c.op, ins), out_dt};
}

// be: the call's backend, resolved once by the caller.
void run(const Call& c, OpId id, BackendId be, const Tensor& out, std::initializer_list<Named> ins,
         const OpOptions& opt) {
  // Built in place (the struct is ~900 bytes: no default-built copy first).
  const Named* n = ins.begin();
  IterArgs it = ins.size() == 1   ? detail::make_iter(out, {n[0].t})
                : ins.size() == 2 ? detail::make_iter(out, {n[0].t, n[1].t})
                : ins.size() == 3 ? detail::make_iter(out, {n[0].t, n[1].t, n[2].t})
                                  : detail::make_iter(out, {});
  it.scalar[0] = c.scalar;
  it.scalar[1] = c.scalar2;
  it.stream = opt.stream;
  const DType key = c.rule == DTypeRule::compare ? n[0].t->dtype() : out.dtype();
  const auto k = Registry::get().find(id, be, key, it);
  if (out.numel() == 0) return;
  k.run(it);
}

// After the kernel ran, while a tape records. A comparison's inputs get no
// gradient through its bool output: it is recorded only as a write of out.
void record(autograd::TapeState& tape, const Call& c, const Tensor& out,
            std::initializer_list<Named> ins, const OpOptions& opt) {
  if (c.rule == DTypeRule::compare)
    autograd::detail::record(tape, c.op, {}, {&out}, {}, nullptr, opt);
  else
    detail::record_elementwise(tape, c.op, {c.scalar, c.scalar2}, out, ins, opt);
}

// The `_out` form: the caller's out must have the broadcast shape.
void ew_out(const Call& c, OpId id, const Tensor& out, std::initializer_list<Named> ins,
            const OpOptions& opt, DType out_dt_if_convert = DType::f32) {
  detail::check_defined(c.op, out, "out");
  const auto [shape, dt] =
      check_inputs(c, ins, c.rule == DTypeRule::convert ? out.dtype() : out_dt_if_convert);
  std::initializer_list<Named> all = ins;
  const Device dev = out.device();
  for (const Named& n : all)
    STRATA_CHECK(n.t->device() == dev, c.op, n.name, " is on ", n.t->device().str(),
                 " but out is on ", dev.str());
  if (c.rule == DTypeRule::convert) {
    for (const Named& n : all) detail::check_broadcasts_to(c.op, *n.t, n.name, out.shape());
    detail::check_output(c.op, out, "out", out.shape(), dt, dev);
  } else {
    detail::check_output(c.op, out, "out", shape, dt, dev);
  }
  detail::check_no_overlap(c.op, out, "out", ins, /*allow_same=*/true);
  autograd::TapeState* tape = autograd::detail::recording_tape();
  if (tape != nullptr) detail::check_elementwise_in_place(c.op, out, ins);
  run(c, id, detail::resolve_backend(c.op, opt.backend, dev), out, ins, opt);
  if (tape != nullptr) record(*tape, c, out, ins, opt);
}

// The allocating form: validation first, so nothing is allocated on bad input.
Tensor ew_new(const Call& c, OpId id, std::initializer_list<Named> ins, const OpOptions& opt,
              DType convert_to = DType::f32) {
  const auto [shape, dt] = check_inputs(c, ins, convert_to);
  const Device dev = detail::check_same_device(c.op, ins);
  const BackendId be = detail::resolve_backend(c.op, opt.backend, dev);
  Tensor out = Tensor::empty(shape, dt, dev);
  run(c, id, be, out, ins, opt);
  if (autograd::TapeState* tape = autograd::detail::recording_tape())
    record(*tape, c, out, ins, opt);
  return out;
}

}  // namespace

// One definition per op; the op's registry name is its function name.
#define STRATA_BINARY(name, rule)                                                              \
  Tensor name(const Tensor& a, const Tensor& b, const OpOptions& opt) {                        \
    static const OpId id = op_id_of(#name);                                                    \
    return ew_new({#name, DTypeRule::rule}, id, {{&a, "a"}, {&b, "b"}}, opt);                  \
  }                                                                                            \
  void name##_out(const Tensor& out, const Tensor& a, const Tensor& b, const OpOptions& opt) { \
    static const OpId id = op_id_of(#name);                                                    \
    ew_out({#name, DTypeRule::rule}, id, out, {{&a, "a"}, {&b, "b"}}, opt);                    \
  }
// a with a scalar: registry op `name_scalar`.
#define STRATA_SCALAR(name, rule)                                                       \
  Tensor name(const Tensor& a, double s, const OpOptions& opt) {                        \
    static const OpId id = op_id_of(#name "_scalar");                                   \
    return ew_new({#name "_scalar", DTypeRule::rule, s}, id, {{&a, "a"}}, opt);         \
  }                                                                                     \
  void name##_out(const Tensor& out, const Tensor& a, double s, const OpOptions& opt) { \
    static const OpId id = op_id_of(#name "_scalar");                                   \
    ew_out({#name "_scalar", DTypeRule::rule, s}, id, out, {{&a, "a"}}, opt);           \
  }
STRATA_BINARY(add, floating)
STRATA_BINARY(sub, floating)
STRATA_BINARY(mul, floating)
STRATA_BINARY(div, floating)
STRATA_BINARY(silu_mul, floating)
STRATA_BINARY(pow, floating)
STRATA_BINARY(maximum, floating)
STRATA_BINARY(minimum, floating)

// The activations' backward: (grad, x or y) -> dx.
#define STRATA_ACTIVATION_BACKWARD(name, second)                                                  \
  Tensor name(const Tensor& grad, const Tensor& v, const OpOptions& opt) {                        \
    static const OpId id = op_id_of(#name);                                                       \
    return ew_new({#name}, id, {{&grad, "grad"}, {&v, second}}, opt);                             \
  }                                                                                               \
  void name##_out(const Tensor& out, const Tensor& grad, const Tensor& v, const OpOptions& opt) { \
    static const OpId id = op_id_of(#name);                                                       \
    ew_out({#name}, id, out, {{&grad, "grad"}, {&v, second}}, opt);                               \
  }
STRATA_ACTIVATION_BACKWARD(relu_backward, "x")
STRATA_ACTIVATION_BACKWARD(gelu_backward, "x")
STRATA_ACTIVATION_BACKWARD(gelu_tanh_backward, "x")
STRATA_ACTIVATION_BACKWARD(silu_backward, "x")
STRATA_ACTIVATION_BACKWARD(sigmoid_backward, "y")
STRATA_ACTIVATION_BACKWARD(tanh_backward, "y")
STRATA_ACTIVATION_BACKWARD(abs_backward, "x")
#undef STRATA_ACTIVATION_BACKWARD

STRATA_SCALAR(add, floating)
STRATA_SCALAR(sub, floating)
STRATA_SCALAR(rsub, floating)
STRATA_SCALAR(mul, floating)
STRATA_SCALAR(div, floating)
STRATA_SCALAR(rdiv, floating)
STRATA_SCALAR(pow, floating)

#define STRATA_UNARY(name)                                                    \
  Tensor name(const Tensor& x, const OpOptions& opt) {                        \
    static const OpId id = op_id_of(#name);                                   \
    return ew_new({#name}, id, {{&x, "x"}}, opt);                             \
  }                                                                           \
  void name##_out(const Tensor& out, const Tensor& x, const OpOptions& opt) { \
    static const OpId id = op_id_of(#name);                                   \
    ew_out({#name}, id, out, {{&x, "x"}}, opt);                               \
  }
STRATA_UNARY(neg)
STRATA_UNARY(exp)
STRATA_UNARY(log)
STRATA_UNARY(sqrt)
STRATA_UNARY(rsqrt)
STRATA_UNARY(tanh)
STRATA_UNARY(sigmoid)
STRATA_UNARY(relu)
STRATA_UNARY(gelu)
STRATA_UNARY(gelu_tanh)
STRATA_UNARY(silu)
STRATA_UNARY(abs)
#undef STRATA_UNARY

// Comparisons, bool out: a, b broadcast (registry op `name`) and a with a
// scalar (`name_scalar`).
STRATA_BINARY(gt, compare)
STRATA_SCALAR(gt, compare)
STRATA_BINARY(ge, compare)
STRATA_SCALAR(ge, compare)
STRATA_BINARY(lt, compare)
STRATA_SCALAR(lt, compare)
STRATA_BINARY(le, compare)
STRATA_SCALAR(le, compare)
STRATA_BINARY(eq, compare)
STRATA_SCALAR(eq, compare)
STRATA_BINARY(ne, compare)
STRATA_SCALAR(ne, compare)
#undef STRATA_BINARY
#undef STRATA_SCALAR

namespace {
// clamp's bounds: at least one, neither NaN; an absent one reaches the
// kernel as NaN (no bound).
Call clamp_call(std::optional<double> lo, std::optional<double> hi) {
  STRATA_CHECK(lo || hi, "clamp", "lo and hi are both absent; give at least one bound");
  STRATA_CHECK(!lo || !std::isnan(*lo), "clamp", "lo is nan; give a number or std::nullopt");
  STRATA_CHECK(!hi || !std::isnan(*hi), "clamp", "hi is nan; give a number or std::nullopt");
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  return {"clamp", DTypeRule::floating, lo.value_or(kNone), hi.value_or(kNone)};
}
}  // namespace

// x [...] -> min(max(x, lo), hi)
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi,
             const OpOptions& opt) {
  static const OpId id = op_id_of("clamp");
  return ew_new(clamp_call(lo, hi), id, {{&x, "x"}}, opt);
}
void clamp_out(const Tensor& out, const Tensor& x, std::optional<double> lo,
               std::optional<double> hi, const OpOptions& opt) {
  static const OpId id = op_id_of("clamp");
  ew_out(clamp_call(lo, hi), id, out, {{&x, "x"}}, opt);
}

// cond bool [...], a [...], b [...] broadcast  ->  out
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const OpOptions& opt) {
  static const OpId id = op_id_of("where");
  return ew_new({"where", DTypeRule::any_same}, id, {{&cond, "cond"}, {&a, "a"}, {&b, "b"}}, opt);
}
void where_out(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b,
               const OpOptions& opt) {
  static const OpId id = op_id_of("where");
  ew_out({"where", DTypeRule::any_same}, id, out, {{&cond, "cond"}, {&a, "a"}, {&b, "b"}}, opt);
}

// x [...]  ->  out [...] of dtype dt
Tensor cast(const Tensor& x, DType dt, const OpOptions& opt) {
  static const OpId id = op_id_of("cast");
  return ew_new({"cast", DTypeRule::convert}, id, {{&x, "x"}}, opt, dt);
}
// src broadcast to dst's shape  ->  dst (converted to dst's dtype)
void copy_(const Tensor& dst, const Tensor& src, const OpOptions& opt) {
  static const OpId id = op_id_of("cast");
  ew_out({"copy_", DTypeRule::convert}, id, dst, {{&src, "src"}}, opt);
}
// t [...] = value
void fill_(const Tensor& t, double value, const OpOptions& opt) {
  static const OpId id = op_id_of("fill");
  ew_out({"fill_", DTypeRule::convert, value}, id, t, {}, opt);
}

}  // namespace strata
