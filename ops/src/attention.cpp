// softmax_attention front ends: validate (attention_plan.cpp), allocate the
// outputs where the op owns them, pick the kernel through the registry and
// run it. No maths here.
#include "strata/attention.hpp"

#include <algorithm>

#include "attention_grad.hpp"
#include "strata/detail/attention_plan.hpp"
#include "strata/elementwise.hpp"
#include "strata/registry.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "softmax_attention";

using Kernel = void (*)(const AttentionArgs&);

OpId attention_op() {
  static const OpId id = Registry::get().op_id(kOp);
  return id;
}

const KernelInfo& find_kernel(const detail::AttentionPlan& p, const AttentionArgs& a, Kernel* run) {
  const auto found = Registry::get().find(attention_op(), p.backend, a.dtype(), a);
  *run = found.run;
  return *found.info;
}

// f16/bf16 on a backend with no kernel of its own for them: q, k, v (and a
// float mask) are converted to f32 with the backend's cast, the f32 kernel
// runs (so accumulation is f32, as the contract asks), and the result is
// rounded into out. lse is f32 for these dtypes already.
bool needs_f32_detour(const detail::AttentionPlan& p, DType dt) {
  return (dt == DType::f16 || dt == DType::bf16) &&
         !Registry::get().has_kernel(attention_op(), p.backend, dt);
}

// The kernels' arguments; the precision reaches them for f32 only (other
// dtypes ignore it, as matmul does).
AttentionArgs attention_args(const detail::AttentionPlan& p, const Tensor& out, const Tensor& lse,
                             const Tensor& q, const Tensor& k, const Tensor& v,
                             const AttentionOptions& opt) {
  AttentionArgs a = detail::make_attention_args(p, out, lse, q, k, v, opt.stream);
  a.precision = q.dtype() == DType::f32 ? opt.precision : Precision::highest;
  return a;
}

// Everything is validated by the time this runs; only the kernel lookup
// (a backend may not support some args) can still throw, and it does so
// before the kernel writes anything.
void dispatch(const detail::AttentionPlan& p, const Tensor& out, const Tensor& lse, const Tensor& q,
              const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  if (needs_f32_detour(p, q.dtype())) {
    OpOptions co;
    co.backend = Registry::get().backend(p.backend).name;
    co.stream = opt.stream;
    AttentionOptions o32 = opt;
    o32.backend = co.backend;
    o32.precision = Precision::highest;  // a precision is asked of f32 inputs only
    if (opt.mask.defined() && opt.mask.dtype() != DType::boolean)
      o32.mask = cast(opt.mask, DType::f32, co);
    const Tensor q32 = cast(q, DType::f32, co), k32 = cast(k, DType::f32, co),
                 v32 = cast(v, DType::f32, co);
    const detail::AttentionPlan p32 = detail::plan_attention(kOp, q32, k32, v32, o32);
    const Tensor out32 = Tensor::empty(p32.out_shape, DType::f32, out.device());
    dispatch(p32, out32, lse, q32, k32, v32, o32);
    copy_(out, out32, co);
    return;
  }
  const AttentionArgs a = attention_args(p, out, lse, q, k, v, opt);
  Kernel run = nullptr;
  find_kernel(p, a, &run);
  if (p.empty_output()) return;  // M == 0, Hq == 0 or an empty batch: nothing to write
  run(a);
}

// dispatch, and while a tape records the op as one node (the f32 detour's
// casts and copy inside it are not recorded).
void dispatch_recorded(const detail::AttentionPlan& p, const Tensor& out, const Tensor& lse,
                       const Tensor& q, const Tensor& k, const Tensor& v,
                       const AttentionOptions& opt) {
  autograd::TapeState* tape = autograd::detail::recording_tape();
  if (tape == nullptr) {
    dispatch(p, out, lse, q, k, v, opt);
    return;
  }
  // The backend's backward kernel recomputes P from lse: have the forward
  // write one when the caller did not ask for it.
  Tensor saved_lse;
  if (detail::attention_backward_has_kernel(p.backend, q.dtype()))
    saved_lse =
        lse.defined() ? lse : Tensor::empty(p.lse_shape, detail::lse_dtype(q.dtype()), q.device());
  {
    const autograd::NoGrad inside;
    dispatch(p, out, saved_lse.defined() ? saved_lse : lse, q, k, v, opt);
  }
  detail::record_attention(*tape, q, k, v, opt, out, lse, saved_lse, p.backend);
}

}  // namespace

// q [..., Hq, M, d]  k [..., Hkv, N, d]  v [..., Hkv, N, dv]  ->  out [..., Hq, M, dv]
Tensor softmax_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                         const AttentionOptions& opt) {
  const detail::AttentionPlan p = detail::plan_attention(kOp, q, k, v, opt);
  Tensor out = Tensor::empty(p.out_shape, q.dtype(), q.device());
  dispatch_recorded(p, out, Tensor(), q, k, v, opt);
  return out;
}

// As softmax_attention, plus lse [..., Hq, M].
AttentionResult softmax_attention_lse(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionOptions& opt) {
  const detail::AttentionPlan p = detail::plan_attention(kOp, q, k, v, opt);
  AttentionResult r{Tensor::empty(p.out_shape, q.dtype(), q.device()),
                    Tensor::empty(p.lse_shape, detail::lse_dtype(q.dtype()), q.device())};
  dispatch_recorded(p, r.out, r.lse, q, k, v, opt);
  return r;
}

// Writes out [..., Hq, M, dv] (and lse [..., Hq, M] when defined) in place.
void softmax_attention_out(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                           const AttentionOptions& opt, const Tensor& lse) {
  const detail::AttentionPlan p = detail::plan_attention(kOp, q, k, v, opt);
  detail::check_attention_outputs(kOp, p, out, lse, q, k, v, opt.mask);
  dispatch_recorded(p, out, lse, q, k, v, opt);
}

std::string softmax_attention_kernel(const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionOptions& opt) {
  const detail::AttentionPlan p = detail::plan_attention(kOp, q, k, v, opt);
  const DType dt = needs_f32_detour(p, q.dtype()) ? DType::f32 : q.dtype();
  // A stand-in output that is never read or written: row-major strides over
  // a borrowed static address (aligned like any allocation), so naming the
  // kernel allocates nothing, on any device.
  alignas(256) static unsigned char never_touched[256];
  const auto none = Storage::wrap(
      never_touched, static_cast<std::size_t>(shape_numel(p.out_shape)) * itemsize(dt), q.device());
  Shape strides(p.out_shape.size(), 1);
  for (std::size_t i = strides.size(); i-- > 1;)
    strides[i - 1] = strides[i] * std::max<std::int64_t>(p.out_shape[i], 1);
  const Tensor out = Tensor::from_storage(none, p.out_shape, strides, 0, dt);
  AttentionArgs a = attention_args(p, out, Tensor(), q, k, v, opt);
  // The detour hands the kernel f32 tensors, float masks included.
  for (Operand* x : {&a.q, &a.k, &a.v, &a.out}) x->dtype = dt;
  if (a.mask.data != nullptr && a.mask.dtype != DType::boolean) a.mask.dtype = dt;
  Kernel run = nullptr;
  const std::string name = find_kernel(p, a, &run).name;
  return needs_f32_detour(p, q.dtype()) ? name + " (via f32)" : name;
}

}  // namespace strata
