// sum_of_squares (strata/optim_ops.hpp) on the reference and cpu backends
// against a plain host sum (squares_case.hpp): every dtype, sizes that cut
// the cpu's chunks of 32768 elements at odd places, empty tensors and an
// empty list, views at odd offsets; bad input; nn::grad_norm and
// nn::clip_grad_norm built on it.
#include <cmath>
#include <vector>

#include "catch.hpp"
#include "squares_case.hpp"
#include "strata/nn/layers.hpp"
#include "strata/nn/optim.hpp"

using namespace strata;

TEST_CASE("sum_of_squares: reference and cpu against a host sum", "[optim][sum_of_squares]") {
  const std::vector<Shape> shapes{{1},     {7},    {0, 4}, {32767}, {32768},
                                  {32769}, {3, 5}, {0},    {65539}, {100001}};
  for (const char* be : {"reference", "cpu"})
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
      for (const bool integral : {true, false}) {
        INFO(be);
        squares_test::check_against_host(shapes, dt, be, Device::cpu(), integral);
        squares_test::check_against_host(shapes, dt, be, Device::cpu(), integral, 1);
      }
}

TEST_CASE("sum_of_squares: empty tensors and an empty list give 0", "[optim][sum_of_squares]") {
  for (const char* be : {"reference", "cpu"}) {
    const std::vector<Tensor> empties{Tensor::zeros({0}), Tensor::zeros({4, 0})};
    CHECK(sum_of_squares(empties, ops_test::on(be)).item<double>() == 0.0);
    const Tensor none = sum_of_squares({}, ops_test::on(be));
    CHECK(none.dtype() == DType::f64);
    CHECK(none.item<double>() == 0.0);
  }
}

TEST_CASE("sum_of_squares: bad input is an error naming the index",
          "[optim][sum_of_squares][errors]") {
  const Tensor a = Tensor::ones({4});
  CHECK_THROWS_WITH(sum_of_squares({a, Tensor()}),
                    ContainsText("sum_of_squares") && ContainsText("tensors[1] is undefined"));
  CHECK_THROWS_WITH(sum_of_squares({a, Tensor::ones({2}, DType::bf16)}),
                    ContainsText("tensors[1] is bf16 but tensors[0] is f32"));
  CHECK_THROWS_WITH(sum_of_squares({a, Tensor::ones({3, 2}).transpose(0, 1)}),
                    ContainsText("tensors[1] is not contiguous"));
  CHECK_THROWS_WITH(sum_of_squares({Tensor::ones({2}, DType::i32)}),
                    ContainsText("tensors[0] is i32") && ContainsText("f32, f64, f16 or bf16"));
}

TEST_CASE("grad_norm and clip_grad_norm use the global norm", "[nn][optim][sum_of_squares]") {
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dt));
    nn::Linear lin(40, 30, true, dt);
    std::vector<Tensor> grads;
    for (const auto& [name, g] : lin.named_gradients()) {
      g.copy_from(Tensor::randn(g.shape(), 9, DType::f64).to(dt));
      grads.push_back(g);
    }
    const double want = std::sqrt(squares_test::host_sum(grads));
    CHECK(std::abs(nn::grad_norm(lin) - want) <= 1e-13 * want);
    const double norm = nn::clip_grad_norm(lin, want / 2);
    CHECK(std::abs(norm - want) <= 1e-13 * want);
    CHECK(nn::clip_coefficient(norm, want / 2) == want / 2 / (norm + 1e-6));
    CHECK(nn::clip_coefficient(norm, want * 2) == 1.0);
    CHECK(nn::clip_coefficient(std::nan(""), 1.0) == 1.0);
    CHECK(std::abs(nn::grad_norm(lin) - want / 2) <= (dt == DType::f32 ? 1e-5 : 1e-2) * want);
  }
}
