// reference kernels of matmul and linear (one registry op, "matmul"): a
// plain triple loop over any strides, every product and sum in f64, the
// result rounded once to the output's dtype. accumulate: out's value (read
// in f64) starts the sum.
#include <cstdint>

#include "reference/operand_access.hpp"
#include "strata/matmul_args.hpp"
#include "strata/registry.hpp"

namespace strata::reference {
namespace {

void matmul(const MatmulArgs& a) {
  const int br = a.batch_rank;
  const std::int64_t batch = a.batch_count();
  for (std::int64_t bi = 0; bi < batch; ++bi) {
    std::int64_t rest = bi, oa = 0, ob = 0, oo = 0;
    for (int d = br - 1; d >= 0; --d) {
      const std::int64_t i = rest % a.batch_shape[d];
      rest /= a.batch_shape[d];
      oa += i * a.a.strides[d];
      ob += i * a.b.strides[d];
      oo += i * a.out.strides[d];
    }
    const std::int64_t am = a.a.strides[br], ak = a.a.strides[br + 1];
    const std::int64_t bk = a.b.strides[br], bn = a.b.strides[br + 1];
    const std::int64_t om = a.out.strides[br], on = a.out.strides[br + 1];
    for (std::int64_t m = 0; m < a.M; ++m) {
      for (std::int64_t n = 0; n < a.N; ++n) {
        const std::int64_t o = oo + m * om + n * on;
        double acc = a.accumulate ? load(a.out, o) : 0.0;
        if (a.bias.data) acc += load(a.bias, n * a.bias.strides[0]);
        for (std::int64_t k = 0; k < a.K; ++k)
          acc += load(a.a, oa + m * am + k * ak) * load(a.b, ob + k * bk + n * bn);
        store(a.out, o, acc);
      }
    }
  }
}

}  // namespace

void register_reference_matmul(Registry& r) {
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "reference", dt, "reference.matmul.loop", &matmul);
}

}  // namespace strata::reference
