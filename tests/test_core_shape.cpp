// Shape, the small vector behind every tensor's sizes and strides, against
// std::vector<std::int64_t> doing the same operations (core/include/strata/shape.hpp).
#include <cstdint>
#include <random>
#include <vector>

#include "catch.hpp"
#include "strata/shape.hpp"

using strata::Shape;
using Vec = std::vector<std::int64_t>;

namespace {
bool same(const Shape& s, const Vec& v) { return Vec(s.begin(), s.end()) == v; }
}  // namespace

TEST_CASE("Shape: random operations agree with std::vector, inline and on the heap",
          "[core][shape]") {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 300; ++round) {
    Shape s;
    Vec v;
    for (int step = 0; step < 60; ++step) {
      const std::int64_t x = static_cast<std::int64_t>(rng() % 1000) - 500;
      const std::size_t pos = v.empty() ? 0 : rng() % (v.size() + 1);
      switch (rng() % 10) {
        case 0:
        case 1:
          s.push_back(x), v.push_back(x);
          break;
        case 2:
          if (!v.empty()) s.pop_back(), v.pop_back();
          break;
        case 3:
          s.insert(s.begin() + pos, x), v.insert(v.begin() + static_cast<long>(pos), x);
          break;
        case 4:
          if (pos < v.size()) s.erase(s.begin() + pos), v.erase(v.begin() + static_cast<long>(pos));
          break;
        case 5: {
          const std::size_t n = rng() % 12;
          s.resize(n, x), v.resize(n, x);
          break;
        }
        case 6: {  // a copy of itself's tail, which may overlap its own storage
          s.assign(s.begin() + static_cast<long>(pos), s.end());
          v.assign(v.begin() + static_cast<long>(pos), v.end());
          break;
        }
        case 7: {  // insert its own elements
          s.insert(s.begin() + pos, s.begin(), s.end());
          const Vec copy = v;
          v.insert(v.begin() + static_cast<long>(pos), copy.begin(), copy.end());
          if (v.size() > 40) s.resize(3), v.resize(3);
          break;
        }
        case 8: {  // copies and moves keep the value, whatever the storage
          Shape c = s;
          Shape m = std::move(c);
          s = m;
          Shape t;
          t = std::move(m);
          s = t;
          break;
        }
        default:
          s = Shape(v.begin(), v.end());
          break;
      }
      REQUIRE(same(s, v));
      REQUIRE(s.size() == v.size());
      REQUIRE((s == Shape(v)) == true);
    }
  }
}

TEST_CASE("Shape: construction, comparison and the 8 inline dims", "[core][shape]") {
  const Shape a{2, 3, 4};
  CHECK(a.size() == 3);
  CHECK(a == Shape(Vec{2, 3, 4}));
  CHECK(a != Shape{2, 3});
  CHECK(Shape(4, 7) == Shape{7, 7, 7, 7});
  CHECK(Shape{}.empty());
  Shape big(9, 1);  // past the inline capacity: on the heap, same behaviour
  CHECK(big.capacity() > Shape::kInline);
  big[8] = 5;
  const Shape copy = big;
  CHECK(copy[8] == 5);
  CHECK(copy.to_vector() == Vec{1, 1, 1, 1, 1, 1, 1, 1, 5});
  Shape s = a;
  s = big;
  CHECK(s == big);
  s = a;
  CHECK(s == a);
  const Shape& self = s;
  s = self;  // self-assignment
  CHECK(s == a);
}
