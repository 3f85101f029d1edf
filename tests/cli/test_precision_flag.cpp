// `strata attention --precision`: each value reaches AttentionOptions, the
// default is highest, and a bad value is an error naming the flag and the
// value.
#include <string>

#include "attention_cli.hpp"
#include "catch.hpp"
#include "strata/attention.hpp"

using namespace strata;

TEST_CASE("cli: --precision sets AttentionOptions::precision", "[cli][precision]") {
  cli::AttentionCli c;
  CHECK(cli::make_options(c).precision == Precision::highest);
  c.precision = "high";
  CHECK(cli::make_options(c).precision == Precision::high);
  c.precision = "medium";
  CHECK(cli::make_options(c).precision == Precision::medium);
  c.precision = "highest";
  CHECK(cli::make_options(c).precision == Precision::highest);
}

TEST_CASE("cli: a bad --precision names the flag and the value", "[cli][precision]") {
  for (const std::string bad : {"fast", "", "HIGH", "tf32"}) {
    cli::AttentionCli c;
    c.precision = bad;
    INFO("--precision '" << bad << "'");
    try {
      (void)cli::make_options(c);
      FAIL("no error");
    } catch (const Error& e) {
      const std::string what = e.what();
      CHECK(what.find("--precision '" + bad + "'") != std::string::npos);
      CHECK(what.find("highest, high or medium") != std::string::npos);
    }
  }
}
