// Registers the reference backend: always built, always available, host memory.
#include "reference/attention_reference.hpp"
#include "strata/registry.hpp"

namespace strata {
namespace reference {
void register_reference_elementwise(Registry& r);  // elementwise_reference.cpp
// rows_reference.cpp: reductions, softmax, norms, embedding, rotary, cross_entropy
void register_reference_rows(Registry& r);
void register_reference_matmul(Registry& r);  // matmul_reference.cpp
void register_reference_select(Registry& r);  // select_reference.cpp: tril, triu, dropout, topk
void register_reference_optim(Registry& r);   // optim_reference.cpp: adamw_step_, sgd_step_
}  // namespace reference

void register_reference_backend(Registry& r) {
  r.add_backend(BackendInfo{"reference", DeviceType::cpu, true, true, "",
                            "naive Eigen: materialises the score matrix, accumulates in double"});
  r.add_kernel<AttentionArgs>("softmax_attention", "reference", DType::f32,
                              "reference.attention.naive", &reference::attention<float, double>);
  r.add_kernel<AttentionArgs>("softmax_attention", "reference", DType::f64,
                              "reference.attention.naive", &reference::attention<double, double>);
  // The same naive kernel accumulating in the input dtype: the "naive
  // computation in the same dtype" that attention tolerances are scaled from
  // (the harness and `strata attention` reach it through the registry).
  r.add_kernel<AttentionArgs>("softmax_attention_same_dtype", "reference", DType::f32,
                              "reference.attention.naive_f32_accumulation",
                              &reference::attention<float, float>);
  r.add_kernel<AttentionArgs>("softmax_attention_same_dtype", "reference", DType::f64,
                              "reference.attention.naive", &reference::attention<double, double>);
  reference::register_reference_elementwise(r);
  reference::register_reference_rows(r);
  reference::register_reference_matmul(r);
  reference::register_reference_select(r);
  reference::register_reference_optim(r);
}

}  // namespace strata
