// cpu embedding_backward: table_grad [V, D] += grad [N, D] scattered by ids
// [N] (op[0], op[1], op[2]; docs/guide/ops.md). Deterministic without
// atomics: the columns are split between the threads, and each thread
// walks every id in order over its own columns, so a row's contributions
// are always summed in the order of ids. f32/f64 add in place; f16/bf16 sum
// in an f32 copy of the touched rows, rounded once at the end.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu/elementwise/engine.hpp"
#include "cpu/threads.hpp"
#include "cpu/workspace.hpp"
#include "strata/error.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
namespace {

std::int64_t id_at(const Operand& ids, std::int64_t i) {
  const std::int64_t off = i * ids.strides[0];
  if (ids.dtype == DType::i32) return static_cast<const std::int32_t*>(ids.data)[off];
  return static_cast<const std::int64_t*>(ids.data)[off];
}

template <class T>
void embedding_backward(const IterArgs& a) {
  using C = compute_t<T>;
  const Operand &tg = a.op[0], &g = a.op[1], &ids = a.op[2];
  const std::int64_t vocab = tg.shape[0], n = a.shape[0], d = a.shape[1];
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t id = id_at(ids, i);
    if (id < 0 || id >= vocab)
      fail("embedding_backward", "ids holds ", id, " at index ", i, ", outside [0, ", vocab, ")");
  }
  T* out = static_cast<T*>(tg.data);
  const T* src = static_cast<const T*>(g.data);
  constexpr bool kInPlace = std::is_same_v<T, C>;
  // f16/bf16: the f32 sums of every row (allocated before the parallel region).
  std::vector<C> acc =
      workspace<C>({kInPlace ? 0 : vocab, kInPlace ? 0 : d}, "embedding_backward", "f32 row sums");
  const std::int64_t chunk = 64;
  const std::int64_t chunks = (d + chunk - 1) / chunk;
  const int team = region_team(n * d >= 32768 ? chunks : 1);
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t j0 = c * chunk, j1 = std::min(d, j0 + chunk);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t id = id_at(ids, i);
      const T* s = src + i * g.strides[0];
      if constexpr (kInPlace) {
        T* o = out + id * tg.strides[0];
        for (std::int64_t j = j0; j < j1; ++j) o[j * tg.strides[1]] += s[j * g.strides[1]];
      } else {
        C* o = acc.data() + id * d;
        for (std::int64_t j = j0; j < j1; ++j) o[j] += convert<C>(s[j * g.strides[1]]);
      }
    }
  }
  if constexpr (!kInPlace) {
    std::vector<char> touched(static_cast<std::size_t>(vocab), 0);
    for (std::int64_t i = 0; i < n; ++i) touched[static_cast<std::size_t>(id_at(ids, i))] = 1;
    for (std::int64_t v = 0; v < vocab; ++v) {
      if (!touched[static_cast<std::size_t>(v)]) continue;
      for (std::int64_t j = 0; j < d; ++j) {
        T& o = out[v * tg.strides[0] + j * tg.strides[1]];
        o = convert<T>(convert<C>(o) + acc[static_cast<std::size_t>(v * d + j)]);
      }
    }
  }
}

}  // namespace

void register_cpu_embedding_backward(Registry& r) {
  const char* name = "cpu.rows.embedding_backward";
  r.add_kernel<IterArgs>("embedding_backward", "cpu", DType::f32, name, &embedding_backward<float>);
  r.add_kernel<IterArgs>("embedding_backward", "cpu", DType::f64, name,
                         &embedding_backward<double>);
  r.add_kernel<IterArgs>("embedding_backward", "cpu", DType::f16, name, &embedding_backward<half>);
  r.add_kernel<IterArgs>("embedding_backward", "cpu", DType::bf16, name,
                         &embedding_backward<bfloat16>);
}

}  // namespace strata::cpu
