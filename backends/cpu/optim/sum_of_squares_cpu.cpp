// cpu sum_of_squares: every tensor of the call cut into chunks of kChunk
// elements, one OpenMP loop over all the chunks; each chunk's squares
// summed in f64 into kLanes independent accumulators (so the loop
// vectorises without reordering anything the compiler may not), the lanes
// added in order, then the chunks' sums added in chunk order. The chunks
// are fixed by the sizes alone, so the result does not depend on the team.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/threads.hpp"
#include "strata/dtype.hpp"
#include "strata/optim_args.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
namespace {

constexpr std::int64_t kChunk = 1 << 15;
constexpr int kLanes = 8;

struct Chunk {
  int tensor;
  std::int64_t begin, end;
};

template <class T>
double widen(T x) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
    return static_cast<double>(static_cast<float>(x));
  else
    return static_cast<double>(x);
}

template <class T>
double chunk_sum(const T* x, std::int64_t begin, std::int64_t end) {
  double lane[kLanes] = {};
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const double v = widen(x[i + l]);
      lane[l] += v * v;
    }
  for (int l = 0; i < end; ++i, ++l) {
    const double v = widen(x[i]);
    lane[l] += v * v;
  }
  double s = 0.0;
  for (double v : lane) s += v;
  return s;
}

template <class T>
void sum_of_squares(const SumOfSquaresArgs& a) {
  std::vector<Chunk> chunks;
  for (int i = 0; i < a.count; ++i)
    for (std::int64_t b = 0; b < a.tensors[i].numel; b += kChunk)
      chunks.push_back({i, b, std::min(a.tensors[i].numel, b + kChunk)});
  const auto n = static_cast<std::int64_t>(chunks.size());
  std::vector<double> partial(chunks.size());
  const int team = region_team(n);
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::int64_t c = 0; c < n; ++c) {
    const Chunk& k = chunks[static_cast<std::size_t>(c)];
    partial[static_cast<std::size_t>(c)] =
        chunk_sum(static_cast<const T*>(a.tensors[k.tensor].data), k.begin, k.end);
  }
  double total = 0.0;
  for (double v : partial) total += v;
  *static_cast<double*>(a.out) = total;
}

}  // namespace

void register_cpu_sum_of_squares(Registry& r) {
  constexpr const char* op = "sum_of_squares";
  r.add_kernel<SumOfSquaresArgs>(op, "cpu", DType::f32, "cpu.optim.sum_of_squares",
                                 &sum_of_squares<float>);
  r.add_kernel<SumOfSquaresArgs>(op, "cpu", DType::f64, "cpu.optim.sum_of_squares",
                                 &sum_of_squares<double>);
  r.add_kernel<SumOfSquaresArgs>(op, "cpu", DType::f16, "cpu.optim.sum_of_squares",
                                 &sum_of_squares<half>);
  r.add_kernel<SumOfSquaresArgs>(op, "cpu", DType::bf16, "cpu.optim.sum_of_squares",
                                 &sum_of_squares<bfloat16>);
}

}  // namespace strata::cpu
