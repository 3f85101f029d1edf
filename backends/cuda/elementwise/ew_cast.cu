// cuda cast (and copy_): keyed by the output's dtype, the input's read from
// op[1].dtype; every pair of the seven dtypes (common/convert.hpp rules).
#include <type_traits>

#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/engine.cuh"
#include "cuda/elementwise/ew_types.cuh"

namespace strata::cuda {
namespace {

template <DType O>
void cast(const IterArgs& a) {
  using Out = cuda_t<O>;
  visit_dtype(a.op[1].dtype, [&](auto in) {
    using In = cuda_t<decltype(in)::value>;
    launch_elementwise<Out, In>(a, CastOp<Out, In>{});
  });
}

}  // namespace

std::vector<EwEntry> ew_cast_entries() {
  return {
      {"cast", DType::f32, &cast<DType::f32>},         {"cast", DType::f64, &cast<DType::f64>},
      {"cast", DType::f16, &cast<DType::f16>},         {"cast", DType::bf16, &cast<DType::bf16>},
      {"cast", DType::boolean, &cast<DType::boolean>}, {"cast", DType::i32, &cast<DType::i32>},
      {"cast", DType::i64, &cast<DType::i64>}};
}

}  // namespace strata::cuda
