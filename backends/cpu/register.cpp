// Registers the cpu backend: always built, always available, host memory.
#include <string>

#include "cpu/attention/attention_cpu.hpp"
#include "strata/registry.hpp"

namespace strata {
namespace cpu {
void register_cpu_elementwise(Registry& r);  // elementwise/elementwise_cpu.cpp
void register_cpu_rows(Registry& r);         // rows/: reductions, softmax, norms, embedding, rotary
void register_cpu_matmul(Registry& r);       // matmul/matmul_cpu.cpp
}  // namespace cpu

void register_cpu_backend(Registry& r) {
  r.add_backend(BackendInfo{"cpu", DeviceType::cpu, true, true, "",
                            std::string("OpenMP streaming online softmax, SIMD ") +
                                cpu::isa_name() + " (chosen at run time)"});
  r.add_kernel<AttentionArgs>("softmax_attention", "cpu", DType::f32,
                              "cpu.attention.online_softmax", &cpu::attention_cpu<float>,
                              &cpu::attention_cpu_supports);
  r.add_kernel<AttentionArgs>("softmax_attention", "cpu", DType::f64,
                              "cpu.attention.online_softmax", &cpu::attention_cpu<double>,
                              &cpu::attention_cpu_supports);
  cpu::register_cpu_elementwise(r);
  cpu::register_cpu_rows(r);
  cpu::register_cpu_matmul(r);
}

}  // namespace strata
