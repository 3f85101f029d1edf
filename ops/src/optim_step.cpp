// adamw_step_ / sgd_step_ front ends: validate every list entry (lengths,
// definedness, dtypes, shapes, device, contiguity, overlap) before anything
// is written, then hand the kernel one OptimStepArgs with a table of the
// tensors' addresses. No maths here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "strata/detail/autograd_record.hpp"
#include "strata/detail/op_checks.hpp"
#include "strata/optim_args.hpp"
#include "strata/optim_ops.hpp"

namespace strata {
namespace {

using List = std::vector<Tensor>;

// The state dtype for a param dtype: f64 for f64, f32 otherwise.
DType state_of(DType param) { return param == DType::f64 ? DType::f64 : DType::f32; }
bool is_16bit(DType dt) { return dt == DType::f16 || dt == DType::bf16; }

struct Entry {
  const List* list;
  const char* name;
  DType want;
};

// Checks list[i] against params[i]: defined, the shape, the dtype `want`,
// params[0]'s device, contiguous.
void check_entry(const char* op, const Entry& e, std::size_t i, const Tensor& param) {
  const Tensor& t = (*e.list)[i];
  STRATA_CHECK(t.defined(), op, e.name, "[", i, "] is undefined");
  STRATA_CHECK(t.shape() == param.shape(), op, e.name, "[", i, "] has shape ", shape_str(t.shape()),
               " but params[", i, "] has ", shape_str(param.shape()));
  STRATA_CHECK(t.dtype() == e.want, op, e.name, "[", i, "] is ", dtype_name(t.dtype()),
               " but must be ", dtype_name(e.want));
  STRATA_CHECK(t.device() == param.device(), op, e.name, "[", i, "] is on ", t.device().str(),
               " but params[", i, "] is on ", param.device().str());
  STRATA_CHECK(t.is_contiguous(), op, e.name, "[", i, "] is not contiguous (strides ",
               shape_str(t.strides()), ")");
}

void check_lengths(const char* op, const List& params, std::initializer_list<Entry> lists) {
  for (const Entry& e : lists)
    STRATA_CHECK(e.list->size() == params.size(), op, e.name, " has ", e.list->size(),
                 " tensors but params has ", params.size());
}

// Validates the lists and builds the table; `states` are the state lists
// in order (state0, state1), `masters` may be empty.
OptimStepArgs build(const char* op, const List& params, const List& grads,
                    std::initializer_list<Entry> states, const List& masters,
                    std::vector<OptimTensor>& table) {
  check_lengths(op, params, {{&grads, "grads", DType::f32}});
  check_lengths(op, params, states);
  STRATA_CHECK(masters.empty() || masters.size() == params.size(), op, "masters has ",
               masters.size(), " tensors but must be empty or have params' ", params.size());
  OptimStepArgs a;
  a.count = static_cast<int>(params.size());
  if (params.empty()) return a;
  STRATA_CHECK(params.size() < (std::size_t{1} << 30), op, "params has ", params.size(),
               " tensors, too many for one call");
  STRATA_CHECK(params[0].defined(), op, "params[0] is undefined");
  STRATA_CHECK(grads[0].defined(), op, "grads[0] is undefined");
  const DType pdt = params[0].dtype(), gdt = grads[0].dtype(), sdt = state_of(pdt);
  STRATA_CHECK(pdt == DType::f32 || pdt == DType::f64 || is_16bit(pdt), op, "params[0] is ",
               dtype_name(pdt), " but must be f32, f64, f16 or bf16");
  STRATA_CHECK(gdt == pdt || (is_16bit(pdt) && gdt == DType::f32), op, "grads[0] is ",
               dtype_name(gdt), " but must be ", dtype_name(pdt),
               is_16bit(pdt) ? " or f32 (params' dtype or f32)" : " (params' dtype)");
  STRATA_CHECK(masters.empty() || is_16bit(pdt), op, "masters are for f16/bf16 params, but params",
               " are ", dtype_name(pdt), ": pass no masters");
  const Device dev = params[0].device();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    STRATA_CHECK(p.defined(), op, "params[", i, "] is undefined");
    STRATA_CHECK(p.dtype() == pdt, op, "params[", i, "] is ", dtype_name(p.dtype()),
                 " but params[0] is ", dtype_name(pdt), " (one dtype per call)");
    STRATA_CHECK(p.device() == dev, op, "params[", i, "] is on ", p.device().str(),
                 " but params[0] is on ", dev.str());
    STRATA_CHECK(p.is_contiguous(), op, "params[", i, "] is not contiguous (strides ",
                 shape_str(p.strides()), ")");
    check_entry(op, {&grads, "grads", gdt}, i, p);
    for (const Entry& e : states) check_entry(op, {e.list, e.name, sdt}, i, p);
    if (!masters.empty()) check_entry(op, {&masters, "masters", DType::f32}, i, p);
  }
  // Nothing may share memory with anything else of the call: every tensor
  // is contiguous, so each is one byte interval; sorted by start, any
  // overlap shows between an interval and the furthest end before it.
  struct Span {
    std::uintptr_t lo, hi;
    const char* name;
    std::size_t index;
  };
  std::vector<Span> spans;
  auto add_list = [&](const List& l, const char* name) {
    for (std::size_t i = 0; i < l.size(); ++i) {
      if (l[i].numel() == 0) continue;
      const auto lo = reinterpret_cast<std::uintptr_t>(l[i].data_ptr());
      spans.push_back(
          {lo, lo + static_cast<std::uintptr_t>(l[i].numel()) * itemsize(l[i].dtype()), name, i});
    }
  };
  add_list(params, "params");
  add_list(grads, "grads");
  for (const Entry& e : states) add_list(*e.list, e.name);
  add_list(masters, "masters");
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) { return x.lo < y.lo; });
  for (std::size_t k = 1, far = 0; k < spans.size(); ++k) {
    STRATA_CHECK(spans[k].lo >= spans[far].hi, op, spans[far].name, "[", spans[far].index,
                 "] overlaps ", spans[k].name, "[", spans[k].index,
                 "]: no two tensors of one call may share memory");
    if (spans[k].hi > spans[far].hi) far = k;
  }
  // The update rewrites weights: not while a tape records them.
  for (const Tensor& p : params) autograd::detail::refuse_write_to_watched(op, p);
  table.resize(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    OptimTensor& t = table[i];
    t.param = params[i].data_ptr();
    t.grad = grads[i].data_ptr();
    const Entry* st = states.begin();
    t.state0 = states.size() > 0 ? (*st[0].list)[i].data_ptr() : nullptr;
    t.state1 = states.size() > 1 ? (*st[1].list)[i].data_ptr() : nullptr;
    t.master = masters.empty() ? nullptr : masters[i].data_ptr();
    t.numel = params[i].numel();
  }
  a.tensors = table.data();
  a.param_dtype = pdt;
  a.grad_dtype = gdt;
  a.state_dtype = sdt;
  a.has_master = !masters.empty();
  return a;
}

void check_hyper(const char* op, const char* name, double v, bool ok) {
  STRATA_CHECK(std::isfinite(v) && ok, op, name, " is ", v);
}

// The fields both updates have, then the backend's kernel (nothing to do
// for no params).
void run(const char* op, OptimStepArgs& a, OptimRule rule, double lr, double weight_decay,
         double grad_scale, const List& params, const OpOptions& opt) {
  if (params.empty()) return;
  static const OpId id = Registry::get().op_id("adamw_step_");
  static const OpId sgd_id = Registry::get().op_id("sgd_step_");
  const BackendId be = detail::resolve_backend(op, opt.backend, params[0].device());
  a.rule = rule;
  a.lr = lr;
  a.weight_decay = weight_decay;
  a.grad_scale = grad_scale;
  a.stream = opt.stream;
  const OpId which = rule == OptimRule::adamw ? id : sgd_id;
  Registry::get().find(which, be, a.param_dtype, a).run(a);
}

}  // namespace

void adamw_step_(const List& params, const List& grads, const List& exp_avg, const List& exp_avg_sq,
                 const List& masters, const AdamWStep& s, const OpOptions& opt) {
  constexpr const char* op = "adamw_step_";
  check_hyper(op, "lr", s.lr, s.lr >= 0);
  check_hyper(op, "beta1", s.beta1, s.beta1 >= 0 && s.beta1 < 1);
  check_hyper(op, "beta2", s.beta2, s.beta2 >= 0 && s.beta2 < 1);
  check_hyper(op, "eps", s.eps, s.eps >= 0);
  check_hyper(op, "weight_decay", s.weight_decay, s.weight_decay >= 0);
  STRATA_CHECK(s.step >= 1, op, "step is ", s.step, " but must be >= 1 (the update's count t)");
  check_hyper(op, "grad_scale", s.grad_scale, s.grad_scale >= 0);
  std::vector<OptimTensor> table;
  OptimStepArgs a = build(
      op, params, grads,
      {{&exp_avg, "exp_avg", DType::f32}, {&exp_avg_sq, "exp_avg_sq", DType::f32}}, masters, table);
  a.beta1 = s.beta1;
  a.beta2 = s.beta2;
  a.eps = s.eps;
  a.step = s.step;
  run(op, a, OptimRule::adamw, s.lr, s.weight_decay, s.grad_scale, params, opt);
}

void sgd_step_(const List& params, const List& grads, const List& momentum_buffers,
               const List& masters, const SGDStep& s, const OpOptions& opt) {
  constexpr const char* op = "sgd_step_";
  check_hyper(op, "lr", s.lr, s.lr >= 0);
  check_hyper(op, "momentum", s.momentum, s.momentum >= 0);
  check_hyper(op, "dampening", s.dampening, true);
  check_hyper(op, "weight_decay", s.weight_decay, s.weight_decay >= 0);
  check_hyper(op, "grad_scale", s.grad_scale, s.grad_scale >= 0);
  STRATA_CHECK(!s.nesterov || (s.momentum > 0 && s.dampening == 0), op,
               "nesterov needs momentum > 0 and dampening 0 (torch.optim.SGD's rule)");
  const bool with_momentum = s.momentum != 0;
  STRATA_CHECK(with_momentum || momentum_buffers.empty(), op,
               "momentum is 0 but momentum_buffers has ", momentum_buffers.size(),
               " tensors: pass none");
  std::vector<OptimTensor> table;
  OptimStepArgs a =
      with_momentum ? build(op, params, grads,
                            {{&momentum_buffers, "momentum_buffers", DType::f32}}, masters, table)
                    : build(op, params, grads, {}, masters, table);
  a.momentum = s.momentum;
  a.dampening = s.dampening;
  a.nesterov = s.nesterov;
  a.first_step = s.first_step;
  run(op, a, OptimRule::sgd, s.lr, s.weight_decay, s.grad_scale, params, opt);
}

}  // namespace strata
