// Registers the cpu backend: always built, always available, host memory.
#include <string>

#include "cpu/attention_cpu.hpp"
#include "strata/registry.hpp"

namespace strata {

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
}

}  // namespace strata
