// The fused update of nn::AdamW and nn::SGD: every parameter's tensors
// grouped by (parameter dtype, gradient dtype, decayed or not, master or
// not) and each group handed to adamw_step_ / sgd_step_ in one call (on
// cuda a few launches per group). optim.cpp chooses between this and the
// per-op update.
#include <map>
#include <tuple>

#include "optim_common.hpp"
#include "strata/autograd.hpp"
#include "strata/optim_ops.hpp"

namespace strata::nn {
namespace detail {

bool fusable(const Params& params, const Grads& grads) {
  if (params.empty()) return false;
  const Device dev = params.front().second->device();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor* p = params[i].second;
    const Tensor& g = grads[i].second;
    const DType dt = p->dtype();
    if (!is_floating(dt) || !p->is_contiguous() || p->device() != dev) return false;
    if (!g.defined() || !g.is_contiguous() || g.shape() != p->shape() || g.device() != dev)
      return false;
    if (g.dtype() != dt && !(is_16bit(dt) && g.dtype() == DType::f32)) return false;
  }
  return true;
}

std::vector<FusedGroup> fused_groups(const std::vector<FusedSlot>& slots) {
  std::map<std::tuple<int, int, bool, bool>, FusedGroup> groups;  // a fixed order
  for (const FusedSlot& s : slots) {
    const auto key = std::make_tuple(static_cast<int>(s.param.dtype()),
                                     static_cast<int>(s.grad.dtype()), s.decay, s.master.defined());
    FusedGroup& g = groups[key];
    g.decay = s.decay;
    g.params.push_back(s.param);
    g.grads.push_back(s.grad);
    if (s.state0.defined()) g.state0.push_back(s.state0);
    if (s.state1.defined()) g.state1.push_back(s.state1);
    if (s.master.defined()) g.masters.push_back(s.master);
  }
  std::vector<FusedGroup> out;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

}  // namespace detail

namespace {

// One fused call per group of slots, at rate lr with the gradients scaled,
// weight decay on the groups that decay.
template <class Step, class Call>
void run_groups(const std::vector<detail::FusedSlot>& slots, Step s, double lr, double weight_decay,
                double grad_scale, Call call) {
  s.lr = lr;
  s.grad_scale = grad_scale;
  for (const detail::FusedGroup& g : detail::fused_groups(slots)) {
    s.weight_decay = g.decay ? weight_decay : 0.0;
    call(g, s);
  }
}

}  // namespace

void AdamW::fused_step(const detail::Params& params, const detail::Grads& grads, double lr,
                       double grad_scale) {
  std::vector<detail::FusedSlot> slots;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    const Moments& mo = moments_[i];
    slots.push_back({*p, grads[i].second, mo.exp_avg, mo.exp_avg_sq, mo.master,
                     o_.weight_decay != 0 && o_.decay(name, *p)});
  }
  run_groups(slots,
             AdamWStep{.beta1 = o_.beta1, .beta2 = o_.beta2, .eps = o_.eps, .step = steps_ + 1}, lr,
             o_.weight_decay, grad_scale, [&](const detail::FusedGroup& g, const AdamWStep& s) {
               adamw_step_(g.params, g.grads, g.state0, g.state1, g.masters, s, o_.op);
             });
}

void SGD::fused_step(const detail::Params& params, const detail::Grads& grads, double lr,
                     double grad_scale) {
  const bool with_momentum = o_.momentum != 0;
  // torch.optim.SGD: the first step's buffer is the gradient itself.
  const bool first = with_momentum && !slots_.front().buf.defined();
  std::vector<detail::FusedSlot> slots;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    Slot& sl = slots_[i];
    if (first) sl.buf = Tensor::zeros(p->shape(), detail::state_dtype(p->dtype()), p->device());
    slots.push_back({*p, grads[i].second, sl.buf, Tensor(), sl.master,
                     o_.weight_decay != 0 && o_.decay(name, *p)});
  }
  run_groups(slots,
             SGDStep{.momentum = o_.momentum,
                     .dampening = o_.dampening,
                     .nesterov = o_.nesterov,
                     .first_step = first},
             lr, o_.weight_decay, grad_scale, [&](const detail::FusedGroup& g, const SGDStep& s) {
               sgd_step_(g.params, g.grads, g.state0, g.masters, s, o_.op);
             });
}

}  // namespace strata::nn
