#pragma once
// The driver of the "inputs written by the kernels just before it" tests
// (test_cuda_gemv.cpp, test_cuda_gemv_multirow.cpp): kernels launched with
// programmatic dependent launch must not read what their predecessor on the
// stream is still writing, eagerly or replayed from a graph.
#include "strata/elementwise.hpp"
#include "strata/graph.hpp"
#include "strata/matmul.hpp"
#include "strata/tensor.hpp"

namespace strata_test {

// Options for the cuda backend on st's stream (precision highest),
// accumulating into out or not.
inline strata::MatmulOptions cuda_on_stream(const strata::Stream& st, bool accumulate) {
  strata::MatmulOptions o;
  o.backend = "cuda";
  o.stream = st.handle();
  o.accumulate = accumulate;
  return o;
}

// cuda_on_stream's two forms: plain, and accumulating into out.
struct StepOptions {
  strata::MatmulOptions opt, acc;
};
inline StepOptions step_options(const strata::Stream& st) {
  return {cuda_on_stream(st, false), cuda_on_stream(st, true)};
}

// Runs `step` 4 times eagerly, then captures it once and replays it 6 times.
// Before each run set(dv, sv) queues new input values on st; after it
// expect(y_before, dv, sv) checks y against y's values before the run. The
// values are exact in f32.
template <class Set, class Step, class Expect>
void eager_then_replayed(strata::Stream& st, const strata::Tensor& y, const Set& set,
                         const Step& step, const Expect& expect) {
  const auto once = [&](float dv, float sv, const auto& run) {
    const strata::Tensor before = y.to(strata::Device::cpu());
    set(double(dv), double(sv));
    run();
    st.synchronize();
    expect(before, dv, sv);
  };
  st.synchronize();
  for (int i = 0; i < 4; ++i) once(0.25f * float(i), 1.0f + float(i), step);
  strata::Graph g = strata::Graph::capture(st, step);
  for (int i = 0; i < 6; ++i)  // d and s change between replays
    once(-0.5f * float(i), 0.5f - float(i), [&] { g.replay(st); });
}

// The same with the inputs the tests vary: before each run d is filled with
// dv and s with sv on `opt`'s stream (st's).
template <class Step, class Expect>
void eager_then_replayed(strata::Stream& st, const strata::Tensor& y, const strata::Tensor& d,
                         const strata::Tensor& s, const strata::OpOptions& opt, const Step& step,
                         const Expect& expect) {
  eager_then_replayed(
      st, y,
      [&](double dv, double sv) {
        strata::fill_(d, dv, opt);
        strata::fill_(s, sv, opt);
      },
      step, expect);
}

}  // namespace strata_test
