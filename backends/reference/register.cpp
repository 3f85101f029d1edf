// Registers the reference backend: always built, always available, host memory.
#include "reference/attention_reference.hpp"
#include "strata/registry.hpp"

namespace strata {

void register_reference_backend(Registry& r) {
  r.add_backend(BackendInfo{"reference", DeviceType::cpu, true, true, "",
                            "naive Eigen: materialises the score matrix, accumulates in double"});
  r.add_kernel<AttentionArgs>("softmax_attention", "reference", DType::f32,
                              "reference.attention.naive", &reference::attention<float, double>);
  r.add_kernel<AttentionArgs>("softmax_attention", "reference", DType::f64,
                              "reference.attention.naive", &reference::attention<double, double>);
}

}  // namespace strata
