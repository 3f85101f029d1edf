#pragma once
// One include for Catch2 2.13 (Debian) and 3.x (GPU machine).
#include <string>

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
using Catch::Approx;  // global in 2.13, as tests spell it
// A substring matcher for CHECK_THROWS_WITH under either version.
inline auto ContainsText(const std::string& s) { return Catch::Matchers::ContainsSubstring(s); }
#else
#include <catch2/catch.hpp>
inline auto ContainsText(const std::string& s) { return Catch::Matchers::Contains(s); }
#endif
