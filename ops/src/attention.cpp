// softmax_attention front ends: validate (attention_plan.cpp), allocate the
// outputs where the op owns them, pick the kernel through the registry and
// run it. No maths here.
#include "strata/attention.hpp"

#include "strata/detail/attention_plan.hpp"
#include "strata/registry.hpp"

namespace strata {
namespace {

constexpr const char* kOp = "softmax_attention";

using Kernel = void (*)(const AttentionArgs&);

const KernelInfo& find_kernel(const detail::AttentionPlan& p, const AttentionArgs& a, Kernel* run) {
  static const OpId id = Registry::get().op_id(kOp);
  const auto found = Registry::get().find(id, p.backend, a.dtype, a);
  *run = found.run;
  return *found.info;
}

// Everything is validated by the time this runs; only the kernel lookup
// (a backend may not support some args) can still throw, and it does so
// before the kernel writes anything.
void dispatch(const detail::AttentionPlan& p, const Tensor& out, const Tensor& lse, const Tensor& q,
              const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  const AttentionArgs a = detail::make_attention_args(p, out, lse, q, k, v, opt.stream);
  Kernel run = nullptr;
  find_kernel(p, a, &run);
  if (p.empty_output()) return;  // M == 0, Hq == 0 or an empty batch: nothing to write
  run(a);
}

}  // namespace

// q [..., Hq, M, d]  k [..., Hkv, N, d]  v [..., Hkv, N, dv]  ->  out [..., Hq, M, dv]
Tensor softmax_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                         const AttentionOptions& opt) {
  const detail::AttentionPlan p = detail::plan_attention(kOp, q, k, v, opt);
  Tensor out = Tensor::empty(p.out_shape, q.dtype(), q.device());
  dispatch(p, out, Tensor(), q, k, v, opt);
  return out;
}

// As softmax_attention, plus lse [..., Hq, M].
AttentionResult softmax_attention_lse(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionOptions& opt) {
  const detail::AttentionPlan p = detail::plan_attention(kOp, q, k, v, opt);
  AttentionResult r{Tensor::empty(p.out_shape, q.dtype(), q.device()),
                    Tensor::empty(p.lse_shape, q.dtype(), q.device())};
  dispatch(p, r.out, r.lse, q, k, v, opt);
  return r;
}

// Writes out [..., Hq, M, dv] (and lse [..., Hq, M] when defined) in place.
void softmax_attention_out(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                           const AttentionOptions& opt, const Tensor& lse) {
  const detail::AttentionPlan p = detail::plan_attention(kOp, q, k, v, opt);
  detail::check_attention_outputs(kOp, p, out, lse, q, k, v, opt.mask);
  dispatch(p, out, lse, q, k, v, opt);
}

std::string softmax_attention_kernel(const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionOptions& opt) {
  const detail::AttentionPlan p = detail::plan_attention(kOp, q, k, v, opt);
  // A stand-in output: the lookup only needs shapes, strides and pointers
  // of the right kind, and nothing is run.
  Tensor out = Tensor::empty(p.out_shape, q.dtype(), q.device());
  const AttentionArgs a = detail::make_attention_args(p, out, Tensor(), q, k, v, opt.stream);
  Kernel run = nullptr;
  return find_kernel(p, a, &run).name;
}

}  // namespace strata
