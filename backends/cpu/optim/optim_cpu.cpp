// cpu adamw_step_ / sgd_step_: every tensor of the call cut into chunks of
// kChunk elements, one OpenMP loop over all the chunks of all the tensors
// (small tensors share the team with large ones), each chunk a plain loop
// the compiler vectorises for f32 and f64. The maths is
// common/optim_functors.hpp's, shared with cuda.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "common/optim_functors.hpp"
#include "cpu/threads.hpp"
#include "strata/dtype.hpp"
#include "strata/optim_args.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
namespace {

constexpr std::int64_t kChunk = 1 << 15;

template <class C, class T>
C load(T x) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
    return static_cast<C>(static_cast<float>(x));
  else
    return static_cast<C>(x);
}

template <class T, class C>
T round_to(C x) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
    return T(static_cast<float>(x));
  else
    return static_cast<T>(x);
}

struct Chunk {
  int tensor;
  std::int64_t begin, end;
};

// Element i of tensor t with gradient gi (already scaled): T the param's
// type, C the compute and state type.
template <class T, class C>
inline void update(const OptimTensor& t, const fn::OptimCoef<C>& k, std::int64_t i, C gi) {
  T* p = static_cast<T*>(t.param);
  C* s0 = static_cast<C*>(t.state0);
  C* s1 = static_cast<C*>(t.state1);
  float* master = static_cast<float*>(t.master);
  const C pi = master != nullptr ? static_cast<C>(master[i]) : load<C>(p[i]);
  C next;
  if (k.adamw) {
    next = fn::adamw_update(pi, gi, s0[i], s1[i], k);
  } else {
    C unused = C(0);
    next = fn::sgd_update(pi, gi, s0 != nullptr ? s0[i] : unused, k);
  }
  if (master != nullptr) {
    master[i] = static_cast<float>(next);
    p[i] = round_to<T>(master[i]);  // the stored master, rounded
  } else {
    p[i] = round_to<T>(next);
  }
}

// Gradients scaled per block of kScaleBlock: written to a buffer by one
// loop and read by the next, so each product is rounded (to C, then to G)
// as a separate mul_out would store it and never contracted into the
// update's arithmetic.
constexpr std::int64_t kScaleBlock = 256;

// One chunk: T the param's type, G the grad's, C the compute and state type.
template <class T, class G, class C>
void run_chunk(const OptimStepArgs& a, const fn::OptimCoef<C>& k, const Chunk& c) {
  const OptimTensor& t = a.tensors[c.tensor];
  const G* g = static_cast<const G*>(t.grad);
  if (!k.scale_grad) {
    for (std::int64_t i = c.begin; i < c.end; ++i) update<T, C>(t, k, i, load<C>(g[i]));
    return;
  }
  C scaled[kScaleBlock];
  for (std::int64_t b = c.begin; b < c.end; b += kScaleBlock) {
    const std::int64_t n = std::min(kScaleBlock, c.end - b);
    for (std::int64_t j = 0; j < n; ++j)
      scaled[j] = load<C>(round_to<G>(load<C>(g[b + j]) * k.grad_scale));
    for (std::int64_t j = 0; j < n; ++j) update<T, C>(t, k, b + j, scaled[j]);
  }
}

template <class T, class G>
void optim_typed(const OptimStepArgs& a) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const fn::OptimCoef<C> k = fn::optim_coef<C>(a);
  std::vector<Chunk> chunks;
  for (int i = 0; i < a.count; ++i)
    for (std::int64_t b = 0; b < a.tensors[i].numel; b += kChunk)
      chunks.push_back({i, b, std::min(a.tensors[i].numel, b + kChunk)});
  const auto n = static_cast<std::int64_t>(chunks.size());
  const int team = region_team(n);
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::int64_t c = 0; c < n; ++c)
    run_chunk<T, G, C>(a, k, chunks[static_cast<std::size_t>(c)]);
}

template <class T>
void optim_step(const OptimStepArgs& a) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    if (a.grad_dtype == DType::f32) return optim_typed<T, float>(a);
  }
  optim_typed<T, T>(a);
}

}  // namespace

void register_cpu_optim(Registry& r) {
  for (const char* op : {"adamw_step_", "sgd_step_"}) {
    const std::string name = std::string("cpu.optim.") + op;
    r.add_kernel<OptimStepArgs>(op, "cpu", DType::f32, name, &optim_step<float>);
    r.add_kernel<OptimStepArgs>(op, "cpu", DType::f64, name, &optim_step<double>);
    r.add_kernel<OptimStepArgs>(op, "cpu", DType::f16, name, &optim_step<half>);
    r.add_kernel<OptimStepArgs>(op, "cpu", DType::bf16, name, &optim_step<bfloat16>);
  }
}

}  // namespace strata::cpu
