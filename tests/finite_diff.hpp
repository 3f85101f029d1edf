#pragma once
// Central finite differences for the gradient tests.
#include <cstdint>

#include "strata/tensor.hpp"

namespace fd_test {

// (loss() at x + h - loss() at x - h) / 2h, x the element e of flat (a
// one-dimensional view of what loss reads), which is left as it was.
template <class Loss>
double central_difference(const strata::Tensor& flat, std::int64_t e, double h, Loss&& loss) {
  const double x = flat.item({e});
  flat.set_item({e}, x + h);
  const double up = loss();
  flat.set_item({e}, x - h);
  const double down = loss();
  flat.set_item({e}, x);
  return (up - down) / (2 * h);
}

}  // namespace fd_test
