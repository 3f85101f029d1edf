// Registers the cpu backend: always built, host memory; available unless
// the CPU lacks an instruction set the library was compiled for.
#include <string>

#include "cpu/attention/attention_cpu.hpp"
#include "strata/registry.hpp"

namespace strata {
namespace cpu {
void register_cpu_elementwise(Registry& r);  // elementwise/elementwise_cpu.cpp
void register_cpu_rows(Registry& r);         // rows/: reductions, softmax, norms, embedding, rotary
void register_cpu_matmul(Registry& r);       // matmul/matmul_cpu.cpp
void register_cpu_select(Registry& r);       // elementwise/select_cpu.cpp: tril, triu, dropout
void register_cpu_topk(Registry& r);         // rows/topk_cpu.cpp
void register_cpu_optim(Registry& r);        // optim/optim_cpu.cpp: adamw_step_, sgd_step_
void register_cpu_sum_of_squares(Registry& r);  // optim/sum_of_squares_cpu.cpp
}  // namespace cpu

namespace {

// "" when this CPU runs what the compiler was allowed to emit (STRATA_CPU_ARCH,
// docs/guide/matmul.md), else why not. Honest limit: code built for x86-64-v3 may use
// AVX2 anywhere, static initialisers included, so an older CPU can die of
// SIGILL before this runs; this catches the cases that get this far.
std::string missing_isa() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  std::string missing;
  auto need = [&](bool have, const char* name) {
    if (!have) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
#if defined(__AVX2__)
  need(__builtin_cpu_supports("avx2"), "avx2");
#endif
#if defined(__FMA__)
  need(__builtin_cpu_supports("fma"), "fma");
#endif
#if defined(__F16C__)
  need(__builtin_cpu_supports("f16c"), "f16c");
#endif
#if defined(__AVX512F__)
  need(__builtin_cpu_supports("avx512f"), "avx512f");
#endif
#if defined(__AVX512BW__)
  need(__builtin_cpu_supports("avx512bw"), "avx512bw");
#endif
#if defined(__AVX512VL__)
  need(__builtin_cpu_supports("avx512vl"), "avx512vl");
#endif
  (void)need;  // unused when built for the baseline
  if (!missing.empty())
    return "this library was compiled for a host instruction set with " + missing +
           ", which this CPU lacks (rebuild with -DSTRATA_CPU_ARCH= for any x86-64 CPU)";
#endif
  return "";
}

// The widest SIMD the compiler could use everywhere (Eigen's packets).
constexpr const char* kBuiltIsa =
#if defined(__AVX512F__)
    "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
    "avx2+fma";
#elif defined(__AVX__)
    "avx";
#else
    "baseline";
#endif

}  // namespace

void register_cpu_backend(Registry& r) {
  const std::string why_not = missing_isa();
  r.add_backend(BackendInfo{"cpu", DeviceType::cpu, true, why_not.empty(), why_not,
                            std::string("OpenMP streaming online softmax, SIMD ") +
                                cpu::isa_name() + " (chosen at run time); Eigen matmul built for " +
                                kBuiltIsa});
  r.add_kernel<AttentionArgs>("softmax_attention", "cpu", DType::f32,
                              "cpu.attention.online_softmax", &cpu::attention_cpu<float>,
                              &cpu::attention_cpu_supports);
  r.add_kernel<AttentionArgs>("softmax_attention", "cpu", DType::f64,
                              "cpu.attention.online_softmax", &cpu::attention_cpu<double>,
                              &cpu::attention_cpu_supports);
  r.add_kernel<AttentionBackwardArgs>("softmax_attention_backward", "cpu", DType::f32,
                                      "cpu.attention_backward.blocked",
                                      &cpu::attention_backward_cpu<float>);
  r.add_kernel<AttentionBackwardArgs>("softmax_attention_backward", "cpu", DType::f64,
                                      "cpu.attention_backward.blocked",
                                      &cpu::attention_backward_cpu<double>);
  cpu::register_cpu_elementwise(r);
  cpu::register_cpu_rows(r);
  cpu::register_cpu_matmul(r);
  cpu::register_cpu_select(r);
  cpu::register_cpu_topk(r);
  cpu::register_cpu_optim(r);
  cpu::register_cpu_sum_of_squares(r);
}

}  // namespace strata
