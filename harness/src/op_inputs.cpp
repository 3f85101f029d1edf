// The inputs of an op case, drawn once on the host and viewed in the case's
// layout on any device: shared by the op runner and the gradient runner.
#include "op_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "case_inputs.hpp"

namespace strata::harness::detail {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What fills a buffer's elements that no view covers: NaN for floating
// dtypes, so a kernel reading outside its view produces NaN; for ids (and
// permutation indices) an id out of range (embedding and index_copy_ then
// throw); for positions a far position.
double gap_value(const InputSpec& in, DType dt) {
  if (is_floating(dt)) return kNaN;
  if (dt == DType::boolean) return 1.0;
  if (in.fill == Fill::ids || in.fill == Fill::permutation)
    return static_cast<double>(in.range + 1000);
  if (in.fill == Fill::positions) return 1e6;
  return -9999.0;
}

std::vector<double> draw(const InputSpec& in, DType dt, std::int64_t n, std::uint64_t seed) {
  std::vector<double> v;
  switch (in.fill) {
    case Fill::normal:
      v = randn_values(n, seed);
      if (!is_floating(dt))
        for (double& x : v) x = std::round(4 * x);
      return v;
    case Fill::positive:
      v = rand_values(n, seed);
      for (double& x : v) x = 0.1 + 2.9 * x;
      return v;
    case Fill::nonzero: {
      v = rand_values(n, seed);
      const std::vector<double> s = rand_values(n, sub_seed(seed, 99));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = (s[i] < 0.5 ? -1 : 1) * (0.5 + 1.5 * v[i]);
      return v;
    }
    case Fill::ties:
      v = randn_values(n, seed);
      for (double& x : v) x = std::round(2 * x) / 2;
      return v;
    case Fill::boolean:
      v = rand_values(n, seed);
      for (double& x : v) x = x < 0.5 ? 1.0 : 0.0;
      return v;
    case Fill::ids:
    case Fill::positions:
      v = rand_values(n, seed);
      for (double& x : v) x = std::floor(x * static_cast<double>(in.range));
      return v;
    case Fill::permutation: {
      // 0 .. range-1 ordered by seeded uniform keys.
      const std::vector<double> keys = rand_values(in.range, seed);
      std::vector<std::int64_t> perm(static_cast<std::size_t>(in.range));
      for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
      std::stable_sort(perm.begin(), perm.end(),
                       [&](std::int64_t a, std::int64_t b) { return keys[a] < keys[b]; });
      v.resize(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i)
        v[i] = perm.empty() ? 0.0 : static_cast<double>(perm[i % in.range]);
      return v;
    }
  }
  return v;
}

}  // namespace

Planned plan_inputs(const OpDescriptor& d, DType dt, OpLayout layout, std::uint64_t seed) {
  Planned p;
  for (std::size_t i = 0; i < d.inputs.size(); ++i) {
    const InputSpec& in = d.inputs[i];
    const DType idt = in.dtype.value_or(dt);
    const ViewSpec s =
        in.follows_layout ? layout_spec(in.shape, layout) : contiguous_spec(in.shape);
    std::vector<double> buf(static_cast<std::size_t>(s.buffer_numel), gap_value(in, idt));
    const std::vector<std::int64_t> pos = view_positions(s);
    const std::vector<double> vals =
        draw(in, idt, static_cast<std::int64_t>(pos.size()), sub_seed(seed, static_cast<int>(i)));
    for (std::size_t e = 0; e < pos.size(); ++e) buf[pos[e]] = vals[e];
    p.buffers.push_back(host_tensor(buf, idt));
    p.specs.push_back(s);
    p.dtypes.push_back(idt);
  }
  return p;
}

std::vector<Tensor> views_of(const Planned& p, Device dev) {
  std::vector<Tensor> v;
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    const ViewSpec& s = p.specs[i];
    v.push_back(p.buffers[i].to(dev).as_strided(s.shape, s.strides, s.offset));
  }
  return v;
}

}  // namespace strata::harness::detail
