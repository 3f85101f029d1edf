#pragma once
// The cpu elementwise engine: one loop over an IterArgs for any functor.
// The linear index space is cut into chunks spread over OpenMP threads
// (small ops stay on the calling thread: a thread team costs more than
// they do); each chunk walks rows of the innermost dim, with a plain
// unit-stride loop the compiler vectorises when every operand is
// contiguous there, and a strided loop otherwise.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "common/convert.hpp"
#include "strata/dtype.hpp"
#include "strata/iter_args.hpp"

namespace strata::cpu {

// Compute type of a stored type: f16/bf16/f32 compute in f32.
template <class T>
struct compute_of {
  using type = float;
};
template <>
struct compute_of<double> {
  using type = double;
};
template <class T>
using compute_t = typename compute_of<T>::type;

template <class T>
inline constexpr bool is_narrow_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

// Any stored type to any stored type (see common/convert.hpp).
template <class To, class From>
inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_narrow_v<From>) {
    return convert<To>(static_cast<float>(x));
  } else if constexpr (is_narrow_v<To>) {
    return To(fn::convert_native<float>(x));
  } else {
    return fn::convert_native<To>(x);
  }
}

inline constexpr std::int64_t kChunk = 32768;  // elements per OpenMP work item

template <class Out, class... Ins, class F, std::size_t... I>
inline void inner_loop(const IterArgs& a, const std::int64_t* off, std::int64_t len, const F& f,
                       std::index_sequence<I...>) {
  const int in = a.ndim - 1;
  Out* o = static_cast<Out*>(a.op[0].data) + off[0];
  const std::tuple<const Ins*...> p{static_cast<const Ins*>(a.op[I + 1].data) + off[I + 1]...};
  const std::int64_t so = a.op[0].strides[in];
  [[maybe_unused]] const std::int64_t si[] = {a.op[I + 1].strides[in]..., 0};
  if (so == 1 && ((si[I] == 1) && ...)) {
#pragma omp simd
    for (std::int64_t j = 0; j < len; ++j) o[j] = f(std::get<I>(p)[j]...);
  } else {
    for (std::int64_t j = 0; j < len; ++j) o[j * so] = f(std::get<I>(p)[j * si[I]]...);
  }
}

// Calls seg(off, len, e) for consecutive runs of the innermost dim that
// together cover the iteration once: off[k] is operand k's element offset
// at the run's start (k < N), len the run's length, e the run's linear index
// (row-major over a.shape: in out's row-major order for an IterArgs built
// by make_ordered_iter). Runs are cut from chunks of kChunk elements spread
// over OpenMP threads; seg must not throw.
template <int N, class Seg>
void for_segments(const IterArgs& a, const Seg& seg) {
  const std::int64_t total = a.numel();
  if (total == 0) return;
  const std::int64_t inner = a.shape[a.ndim - 1];
  auto run_range = [&](std::int64_t b, std::int64_t e) {
    while (b < e) {
      const std::int64_t row = b / inner, j0 = b % inner;
      const std::int64_t len = std::min(inner - j0, e - b);
      std::int64_t off[N] = {};
      std::int64_t r = row;
      for (int d = a.ndim - 2; d >= 0; --d) {
        const std::int64_t i = r % a.shape[d];
        r /= a.shape[d];
        for (int k = 0; k < N; ++k) off[k] += i * a.op[k].strides[d];
      }
      for (int k = 0; k < N; ++k) off[k] += j0 * a.op[k].strides[a.ndim - 1];
      seg(static_cast<const std::int64_t*>(off), len, b);
      b += len;
    }
  };
  const std::int64_t chunks = (total + kChunk - 1) / kChunk;
  if (chunks == 1 || omp_get_max_threads() == 1) {
    run_range(0, total);
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c)
    run_range(c * kChunk, std::min(total, (c + 1) * kChunk));
}

// out = f(ins...) over the iteration; f takes and returns stored types.
template <class Out, class... Ins, class F>
void for_each(const IterArgs& a, const F& f) {
  constexpr int N = 1 + static_cast<int>(sizeof...(Ins));
  for_segments<N>(a, [&](const std::int64_t* off, std::int64_t len, std::int64_t) {
    inner_loop<Out, Ins...>(a, off, len, f, std::index_sequence_for<Ins...>{});
  });
}

// A maths functor (common/elementwise_functors.hpp) over one floating dtype T:
// inputs converted to the compute type, the result back to T.
template <class F>
F make_functor(const IterArgs& a) {
  return fn::make_functor<F>(a.scalar);
}

template <class F, class T>
void unary_kernel(const IterArgs& a) {
  using C = compute_t<T>;
  const F f = make_functor<F>(a);
  for_each<T, T>(a, [f](T x) { return convert<T>(f(convert<C>(x))); });
}

template <class F, class T>
void binary_kernel(const IterArgs& a) {
  using C = compute_t<T>;
  const F f = make_functor<F>(a);
  for_each<T, T, T>(a, [f](T x, T y) { return convert<T>(f(convert<C>(x), convert<C>(y))); });
}

// A comparison functor over any stored type T, bool out: compared in T
// itself (f32 for f16/bf16, exactly). With a scalar: s rounded to a
// floating T first (x > 0.1 on f32 compares with 0.1f, as PyTorch), an
// integer or bool x compared with s in double.
template <class T>
using cmp_t = std::conditional_t<is_narrow_v<T>, float, T>;

template <class F, class T>
void compare_kernel(const IterArgs& a) {
  const F f{};
  for_each<bool, T, T>(a, [f](T x, T y) { return f(convert<cmp_t<T>>(x), convert<cmp_t<T>>(y)); });
}

template <class F, class T>
void compare_scalar_kernel(const IterArgs& a) {
  if constexpr (std::is_floating_point_v<T> || is_narrow_v<T>) {
    const F f{convert<double>(convert<T>(a.scalar[0]))};
    for_each<bool, T>(a, [f](T x) { return f(convert<cmp_t<T>>(x)); });
  } else {
    const F f{a.scalar[0]};
    for_each<bool, T>(a, [f](T x) { return f(static_cast<double>(x)); });
  }
}

}  // namespace strata::cpu
