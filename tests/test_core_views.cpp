// Views against an independent index model: each model view is a closure
// from a logical index to a flat storage position, composed op by op with no
// strides at all; the storage holds arange values, so every element of a
// strata view must read back exactly the position the model predicts.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/tensor.hpp"
#include "test_core_util.hpp"

using strata::Shape;
using strata::Slice;
using strata::Tensor;
using Index = std::vector<std::int64_t>;

namespace {

struct Model {
  Shape shape;
  std::function<std::int64_t(const Index&)> pos;
};

std::int64_t numel_of(const Shape& s) {
  std::int64_t n = 1;
  for (auto v : s) n *= v;
  return n;
}

Index insert_at(Index idx, int d, std::int64_t v) {
  idx.insert(idx.begin() + d, v);
  return idx;
}

Index erase_at(Index idx, int d) {
  idx.erase(idx.begin() + d);
  return idx;
}

std::int64_t ravel(const Index& idx, const Shape& shape) {
  std::int64_t k = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) k = k * shape[d] + idx[d];
  return k;
}

Index unravel(std::int64_t k, const Shape& shape) {
  Index idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = k % shape[d];
    k /= shape[d];
  }
  return idx;
}

// CPython's PySlice_AdjustIndices followed by enumeration: the positions a
// Python slice selects from a sequence of length n.
std::vector<std::int64_t> python_slice(std::int64_t n, std::optional<std::int64_t> start,
                                       std::optional<std::int64_t> stop, std::int64_t step) {
  const std::int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? n - 1 : n;
  auto adjust = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
    if (!v) return dflt;
    std::int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  const std::int64_t b = adjust(start, step < 0 ? upper : lower);
  const std::int64_t e = adjust(stop, step < 0 ? lower : upper);
  std::vector<std::int64_t> out;
  for (std::int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(i);
  return out;
}

// Whether some (strides, offset) reproduces `m` exactly, found by brute
// force: derive each stride from a unit step and verify every element.
bool viewable(const Model& m) {
  if (numel_of(m.shape) <= 1) return true;
  const Index zero(m.shape.size(), 0);
  const std::int64_t base = m.pos(zero);
  Shape strides(m.shape.size(), 0);
  for (std::size_t d = 0; d < m.shape.size(); ++d) {
    if (m.shape[d] < 2) continue;
    Index e = zero;
    e[d] = 1;
    strides[d] = m.pos(e) - base;
  }
  for (const Index& idx : core_test::all_indices(m.shape)) {
    std::int64_t p = base;
    for (std::size_t d = 0; d < idx.size(); ++d) p += idx[d] * strides[d];
    if (p != m.pos(idx)) return false;
  }
  return true;
}

// Checks every element of `t` against the model, and the row-major order of
// to_vector.
void check_against(const Tensor& t, const Model& m) {
  REQUIRE(t.shape() == m.shape);
  REQUIRE(t.numel() == numel_of(m.shape));
  const auto values = t.to_vector<double>();
  std::size_t k = 0;
  for (const Index& idx : core_test::all_indices(m.shape)) {
    const auto expected = static_cast<double>(m.pos(idx));
    INFO("index " << strata::shape_str(idx));
    REQUIRE(t.item(idx) == expected);
    REQUIRE(values[k++] == expected);
  }
}

// A random base tensor over a fresh storage filled with arange values; its
// model is the definition of a strided view.
std::pair<Tensor, Model> random_base(std::mt19937_64& rng, std::ostream& log) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const int rank = static_cast<int>(pick(0, 4));
  Shape shape(rank), strides(rank);
  for (int d = 0; d < rank; ++d) shape[d] = pick(0, 9) == 0 ? 0 : pick(1, 5);
  const bool contiguous = pick(0, 2) == 0;
  std::int64_t run = 1;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = contiguous ? run : pick(-12, 12);  // zero and negative strides included
    run *= std::max<std::int64_t>(shape[d], 1);
  }
  std::int64_t lo = 0, hi = 0;
  for (int d = 0; d < rank; ++d) {
    const std::int64_t reach = (std::max<std::int64_t>(shape[d], 1) - 1) * strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  const std::int64_t offset = -lo + pick(0, 3);
  const std::int64_t capacity = offset + hi + 1 + pick(0, 3);
  auto storage =
      strata::Storage::allocate(static_cast<std::size_t>(capacity) * 8, strata::Device::cpu());
  auto* p = static_cast<double*>(storage->data());
  for (std::int64_t i = 0; i < capacity; ++i) p[i] = static_cast<double>(i);
  log << "base shape " << strata::shape_str(shape) << " strides " << strata::shape_str(strides)
      << " offset " << offset << " capacity " << capacity << "\n";
  Tensor t = Tensor::from_storage(storage, shape, strides, offset, strata::DType::f64);
  Model m{shape, [strides, offset](const Index& idx) {
            std::int64_t q = offset;
            for (std::size_t d = 0; d < idx.size(); ++d) q += idx[d] * strides[d];
            return q;
          }};
  return {t, m};
}

// Applies one random valid view op to both the tensor and the model.
// How often each op ran, so the chain test can prove it exercised them all.
std::map<std::string, int>& op_counts() {
  static std::map<std::string, int> counts;
  return counts;
}

void random_op(std::mt19937_64& rng, Tensor& t, Model& m, std::ostringstream& log) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const int r = t.dim();
  const Model old = m;
  const auto rand_dim = [&] { return static_cast<int>(pick(0, r - 1)) - (pick(0, 1) ? r : 0); };
  const auto wrap = [&](int d) { return d < 0 ? d + r : d; };
  for (;;) {
    switch (pick(0, 11)) {
      case 0: {  // slice with optional bounds and any nonzero step
        if (r == 0) continue;
        const int d = rand_dim();
        const std::int64_t n = m.shape[wrap(d)];
        Slice s;
        if (pick(0, 3)) s.start = pick(-n, n);
        if (pick(0, 3)) s.stop = pick(-n, n);
        do s.step = pick(-3, 3);
        while (s.step == 0);
        log << "slice(" << d << ", " << (s.start ? std::to_string(*s.start) : "None") << ":"
            << (s.stop ? std::to_string(*s.stop) : "None") << ":" << s.step << ")\n";
        const auto picks = python_slice(n, s.start, s.stop, s.step);
        const int wd = wrap(d);
        t = t.slice(d, s);
        ++op_counts()[s.step < 0 ? "slice-negative-step" : "slice"];
        m.shape[wd] = static_cast<std::int64_t>(picks.size());
        m.pos = [old, picks, wd](Index idx) {
          idx[wd] = picks[idx[wd]];
          return old.pos(idx);
        };
        return;
      }
      case 1: {  // select
        if (r == 0) continue;
        const int d = rand_dim(), wd = wrap(d);
        const std::int64_t n = m.shape[wd];
        if (n == 0) continue;
        const std::int64_t i = pick(-n, n - 1);
        log << "select(" << d << ", " << i << ")\n";
        t = t.select(d, i);
        ++op_counts()["select"];
        m.shape.erase(m.shape.begin() + wd);
        const std::int64_t wi = i < 0 ? i + n : i;
        m.pos = [old, wd, wi](const Index& idx) { return old.pos(insert_at(idx, wd, wi)); };
        return;
      }
      case 2: {  // narrow
        if (r == 0) continue;
        const int d = rand_dim(), wd = wrap(d);
        const std::int64_t n = m.shape[wd];
        const std::int64_t start = pick(0, n);
        const std::int64_t len = pick(0, n - start);
        const std::int64_t given = pick(0, 1) && start < n ? start - n : start;
        log << "narrow(" << d << ", " << given << ", " << len << ")\n";
        t = t.narrow(d, given, len);
        ++op_counts()["narrow"];
        m.shape[wd] = len;
        m.pos = [old, wd, start](Index idx) {
          idx[wd] += start;
          return old.pos(idx);
        };
        return;
      }
      case 3: {  // transpose
        if (r == 0) continue;
        const int a = rand_dim(), b = rand_dim();
        log << "transpose(" << a << ", " << b << ")\n";
        t = t.transpose(a, b);
        ++op_counts()["transpose"];
        std::swap(m.shape[wrap(a)], m.shape[wrap(b)]);
        const int wa = wrap(a), wb = wrap(b);
        m.pos = [old, wa, wb](Index idx) {
          std::swap(idx[wa], idx[wb]);
          return old.pos(idx);
        };
        return;
      }
      case 4: {  // permute
        std::vector<int> p(static_cast<std::size_t>(r));
        std::iota(p.begin(), p.end(), 0);
        std::shuffle(p.begin(), p.end(), rng);
        log << "permute(" << strata::shape_str(Shape(p.begin(), p.end())) << ")\n";
        t = t.permute(p);
        ++op_counts()["permute"];
        for (int i = 0; i < r; ++i) m.shape[i] = old.shape[p[i]];
        m.pos = [old, p](const Index& idx) {
          Index o(idx.size());
          for (std::size_t i = 0; i < p.size(); ++i) o[p[i]] = idx[i];
          return old.pos(o);
        };
        return;
      }
      case 5: {  // unsqueeze
        if (r >= 6) continue;
        const int d = static_cast<int>(pick(-(r + 1), r));
        const int wd = d < 0 ? d + r + 1 : d;
        log << "unsqueeze(" << d << ")\n";
        t = t.unsqueeze(d);
        ++op_counts()["unsqueeze"];
        m.shape.insert(m.shape.begin() + wd, 1);
        m.pos = [old, wd](const Index& idx) { return old.pos(erase_at(idx, wd)); };
        return;
      }
      case 6: {  // squeeze one size-1 dim, or all of them
        std::vector<int> ones;
        for (int d = 0; d < r; ++d)
          if (m.shape[d] == 1) ones.push_back(d);
        if (ones.empty()) continue;
        if (pick(0, 1)) {
          const int wd =
              ones[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(ones.size()) - 1))];
          log << "squeeze(" << wd << ")\n";
          t = t.squeeze(wd);
          ++op_counts()["squeeze(d)"];
          m.shape.erase(m.shape.begin() + wd);
          m.pos = [old, wd](const Index& idx) { return old.pos(insert_at(idx, wd, 0)); };
        } else {
          log << "squeeze()\n";
          t = t.squeeze();
          ++op_counts()["squeeze()"];
          Shape kept;
          for (auto s : old.shape)
            if (s != 1) kept.push_back(s);
          m.shape = kept;
          m.pos = [old](const Index& idx) {
            Index o;
            std::size_t k = 0;
            for (auto s : old.shape) o.push_back(s == 1 ? 0 : idx[k++]);
            return old.pos(o);
          };
        }
        return;
      }
      case 7: {  // expand: new leading dims, size-1 dims grown, -1 kept
        if (numel_of(m.shape) > 200) continue;
        const int lead = r >= 5 ? 0 : static_cast<int>(pick(0, 1));
        Shape target;
        for (int i = 0; i < lead; ++i) target.push_back(pick(0, 3));
        for (int d = 0; d < r; ++d) {
          const auto s = m.shape[d];
          target.push_back(s == 1 && pick(0, 1) ? pick(0, 4) : (pick(0, 2) ? s : -1));
        }
        log << "expand(" << strata::shape_str(target) << ")\n";
        t = t.expand(target);
        ++op_counts()["expand"];
        m.shape = target;
        for (std::size_t i = static_cast<std::size_t>(lead); i < target.size(); ++i)
          if (target[i] == -1) m.shape[i] = old.shape[i - static_cast<std::size_t>(lead)];
        m.pos = [old, lead](const Index& idx) {
          Index o(old.shape.size());
          for (std::size_t j = 0; j < o.size(); ++j) o[j] = old.shape[j] == 1 ? 0 : idx[j + lead];
          return old.pos(o);
        };
        return;
      }
      case 8: {  // flip
        if (r == 0) continue;
        const int d = rand_dim(), wd = wrap(d);
        log << "flip(" << d << ")\n";
        t = t.flip(d);
        ++op_counts()["flip"];
        const std::int64_t n = m.shape[wd];
        m.pos = [old, wd, n](Index idx) {
          idx[wd] = n - 1 - idx[wd];
          return old.pos(idx);
        };
        return;
      }
      case 9:
      case 10: {  // reshape to a random factorisation, maybe with -1
        const std::int64_t n = numel_of(m.shape);
        Shape target;
        if (n == 0) {
          target = {pick(0, 2), 0, pick(1, 3)};
          std::shuffle(target.begin(), target.end(), rng);
        } else {
          std::int64_t rest = n;
          const int dims = static_cast<int>(pick(1, 4));
          for (int i = 0; i + 1 < dims; ++i) {
            std::vector<std::int64_t> divs;
            for (std::int64_t q = 1; q <= rest; ++q)
              if (rest % q == 0) divs.push_back(q);
            const auto q =
                divs[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(divs.size()) - 1))];
            target.push_back(q);
            rest /= q;
          }
          target.push_back(rest);
          std::shuffle(target.begin(), target.end(), rng);
        }
        Shape given = target;
        if (n > 0 && pick(0, 1))
          given[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(given.size()) - 1))] =
              -1;
        log << "reshape(" << strata::shape_str(given) << ")";
        Model next{target, [old, target](const Index& idx) {
                     return old.pos(unravel(ravel(idx, target), old.shape));
                   }};
        if (viewable(next)) {
          log << " as a view\n";
          INFO(log.str());
          Tensor v;
          REQUIRE_NOTHROW(v = t.reshape(given));
          REQUIRE(v.storage() == t.storage());
          t = v;
          ++op_counts()["reshape-view"];
          m = next;
        } else {
          log << " refused\n";
          INFO(log.str());
          CORE_REQUIRE_ERROR(t.reshape(given), "Tensor::reshape", "reshape_copy");
          ++op_counts()["reshape-refused"];
          const Tensor c = t.reshape_copy(given);
          REQUIRE(c.storage() != t.storage());
          REQUIRE(c.is_contiguous());
          check_against(c, next);
        }
        return;
      }
      case 11: {  // as_strided over the same storage, relative to the storage start
        if (r == 0 || numel_of(m.shape) == 0) continue;
        // Re-express the current view through its own strides: the model
        // composes positions, strata must land on the same ones.
        log << "as_strided(same layout)\n";
        t = t.as_strided(t.shape(), t.strides(), t.offset());
        ++op_counts()["as_strided"];
        return;
      }
    }
  }
}

}  // namespace

TEST_CASE("core: random view chains match an independent index model", "[core][views]") {
  const std::uint64_t base_seed = 20261130;
  for (int trial = 0; trial < 800; ++trial) {
    const std::uint64_t seed = base_seed + static_cast<std::uint64_t>(trial);
    std::mt19937_64 rng(seed);
    std::ostringstream log;
    log << "seed " << seed << "\n";
    auto [t, m] = random_base(rng, log);
    {
      INFO(log.str());
      check_against(t, m);
    }
    const int steps = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int s = 0; s < steps; ++s) {
      random_op(rng, t, m, log);
      INFO(log.str());
      REQUIRE(t.dim() <= strata::kMaxDims);
      check_against(t, m);
      if (t.numel() == 0) ++op_counts()["empty result"];
      if (std::find(t.strides().begin(), t.strides().end(), 0) != t.strides().end())
        ++op_counts()["zero stride"];
    }
  }
  for (const char* op : {"slice", "slice-negative-step", "select", "narrow", "transpose", "permute",
                         "unsqueeze", "squeeze(d)", "squeeze()", "expand", "flip", "reshape-view",
                         "reshape-refused", "as_strided", "empty result", "zero stride"}) {
    INFO("op " << op << " ran " << op_counts()[op] << " times");
    CHECK(op_counts()[op] >= 30);
  }
}

TEST_CASE("core: views share storage and write through", "[core][views]") {
  Tensor base = Tensor::arange(24, strata::DType::f32).reshape({2, 3, 4});
  Tensor v = base.transpose(0, 2).slice(1, 2, 0, -1).select(2, 1);  // shape [4, 2]
  REQUIRE(v.shape() == Shape{4, 2});
  REQUIRE(v.storage() == base.storage());
  // v[i, j] = base[1, 2 - j, i] = 12 + (2 - j) * 4 + i
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 2; ++j) REQUIRE(v.item({i, j}) == 12 + (2 - j) * 4 + i);
  v.set_item({3, 1}, -7.0);
  REQUIRE(base.item({1, 1, 3}) == -7.0);
  v.fill(0.5);
  REQUIRE(base.item({1, 2, 0}) == 0.5);
  REQUIRE(base.item({0, 2, 0}) == 8.0);  // outside the view: untouched
}

TEST_CASE("core: slice follows Python semantics", "[core][views]") {
  const Tensor a = Tensor::arange(7, strata::DType::f64);
  auto vals = [](const Tensor& t) { return t.to_vector<double>(); };
  using V = std::vector<double>;
  CHECK(vals(a.slice(0, Slice{{}, {}, -1})) == V{6, 5, 4, 3, 2, 1, 0});
  CHECK(vals(a.slice(0, Slice{5, 1, -2})) == V{5, 3});
  CHECK(vals(a.slice(0, Slice{-2, {}, -3})) == V{5, 2});
  CHECK(vals(a.slice(0, Slice{7, {}, -1})) == V{6, 5, 4, 3, 2, 1, 0});  // start n clamps to n-1
  CHECK(vals(a.slice(0, Slice{1, -1, 2})) == V{1, 3, 5});
  CHECK(vals(a.slice(0, Slice{4, 2, 1})).empty());
  CHECK(vals(a.slice(0, 2, 7, 3)) == V{2, 5});
  const Tensor e = a.slice(0, 7, 7);
  CHECK(e.numel() == 0);
  CHECK(e.is_contiguous());
}

TEST_CASE("core: zero and negative strides", "[core][views]") {
  const Tensor a = Tensor::arange(6, strata::DType::f64).reshape({2, 3});
  const Tensor b = a.select(0, 1).unsqueeze(0).expand({4, 3});
  REQUIRE(b.strides() == Shape{0, 1});
  REQUIRE(b.to_vector<double>() == std::vector<double>{3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5});
  const Tensor f = a.flip(1).flip(0);
  REQUIRE(f.strides() == Shape{-3, -1});
  REQUIRE(f.offset() == 5);
  REQUIRE(f.to_vector<double>() == std::vector<double>{5, 4, 3, 2, 1, 0});
  REQUIRE_FALSE(f.is_contiguous());
  const auto [lo, hi] = f.byte_extent();
  CHECK(lo == 0);
  CHECK(hi == 6 * 8);
  // A broadcast over the whole tensor through as_strided with a zero stride.
  const Tensor z = a.as_strided({5, 2}, {0, 5}, 0);
  REQUIRE(z.to_vector<double>() == std::vector<double>{0, 5, 0, 5, 0, 5, 0, 5, 0, 5});
  // reshape of a zero-stride view as a view
  const Tensor r = Tensor::full({1}, 2.0, strata::DType::f64).expand({3, 4}).reshape({12});
  REQUIRE(r.strides() == Shape{0});
}

TEST_CASE("core: reshape views and refusals", "[core][views]") {
  const Tensor a = Tensor::arange(24, strata::DType::f32).reshape({2, 3, 4});
  CHECK(a.reshape({6, -1}).strides() == Shape{4, 1});
  CHECK(a.reshape({-1}).shape() == Shape{24});
  CHECK(a.transpose(0, 1).reshape({3, 2, 2, 2}).strides() == Shape{4, 12, 2, 1});
  CORE_REQUIRE_ERROR(a.transpose(1, 2).reshape({24}), "Tensor::reshape", "reshape_copy",
                     "[2, 4, 3]");
  CORE_REQUIRE_ERROR(a.reshape({5, -1}), "Tensor::reshape", "[5, -1]", "24");
  CORE_REQUIRE_ERROR(a.reshape({-1, -1}), "Tensor::reshape", "more than one -1");
  CORE_REQUIRE_ERROR(a.reshape({2, 3, 4, 1, 1, 1, 1, 1, 1}), "Tensor::reshape", "9 dims");
  const Tensor c = a.transpose(1, 2).reshape_copy({24});
  CHECK(c.to_vector<float>()[1] == 4.0f);
  const Tensor s = Tensor::full({}, 3.0).reshape({1, 1});
  CHECK(s.item({0, 0}) == 3.0);
  CHECK(Tensor::zeros({2, 0}).reshape({0, 5}).shape() == Shape{0, 5});
  CORE_REQUIRE_ERROR(Tensor::zeros({2, 0}).reshape({0, 5, -1}), "Tensor::reshape", "cannot infer");
}
