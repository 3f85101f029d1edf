// The reference backend materialises each head's M x N score matrix. A
// problem whose matrices do not fit in memory must be a strata::Error naming
// the bytes it needs, thrown before anything is allocated, and an allocation
// that fails anyway inside the OpenMP region must come out as a strata::Error
// too (an exception crossing the region's end terminates the process). In
// both cases the process carries on and the next call works.
#include <string>

#include "address_limit.hpp"
#include "catch.hpp"
#include "strata/attention.hpp"

using namespace strata;

namespace {

// The error of one reference call, or "" when it succeeded.
// The inputs are one element each, expanded (stride 0) to their shapes, so
// even sizes whose byte counts overflow cost no memory.
std::string reference_error(std::int64_t heads, std::int64_t M, std::int64_t N) {
  AttentionOptions opt;
  opt.backend = "reference";
  const Tensor one = Tensor::randn({1, 1, 1}, 1);
  try {
    (void)softmax_attention(one.expand({heads, M, 1}), one.expand({heads, N, 1}),
                            one.expand({heads, N, 1}), opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A small call on the reference and cpu backends agrees: the process is fine.
void next_call_works() {
  const Tensor q = Tensor::randn({2, 3, 17, 8}, 4), k = Tensor::randn({2, 3, 29, 8}, 5),
               v = Tensor::randn({2, 3, 29, 8}, 6);
  AttentionOptions ref, cpu;
  ref.backend = "reference";
  cpu.backend = "cpu";
  const auto a = softmax_attention(q, k, v, ref).to_vector<double>();
  const auto b = softmax_attention(q, k, v, cpu).to_vector<double>();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) < 1e-5);
}

}  // namespace

TEST_CASE("reference: a score matrix larger than memory is an error before any allocation",
          "[attention][reference][memory]") {
  // M = N = 200000, d = dv = 1: the inputs are 800 KB each, the f64 score
  // matrix 320 GB. (M N + M d + N d + N dv + dv) * 8 bytes per head.
  const std::string e = reference_error(1, 200000, 200000);
  INFO(e);
  CHECK(e.rfind("softmax_attention: ", 0) == 0);
  CHECK(e.find("needs 320004800008 bytes") != std::string::npos);
  CHECK(e.find("available") != std::string::npos);
  // More heads: still checked before the parallel region.
  CHECK(reference_error(4, 200000, 200000).find("needs 320004800008 bytes") != std::string::npos);
  // Sizes whose byte count overflows 64 bits (M N = 2^62 scores of 8 bytes;
  // the output, M x 1, is 4 MB).
  const std::string huge = reference_error(1, std::int64_t{1} << 20, std::int64_t{1} << 42);
  INFO(huge);
  CHECK(huge.find("more than 2^64 bytes") != std::string::npos);
  next_call_works();
}

TEST_CASE("reference: an allocation failing inside the parallel region is a strata::Error",
          "[attention][reference][memory]") {
#ifdef STRATA_TEST_NO_RLIMIT
  WARN("skipped under a sanitizer (RLIMIT_AS cannot be lowered meaningfully)");
#else
  // The memory check passes (3.2 GB per head, well under what the machine
  // has), but an address-space limit 512 MB above what the process maps now
  // makes the score matrix's allocation fail inside the OpenMP region.
  const std::string e =
      test::with_address_limit(512, [] { return reference_error(4, 20000, 20000); });
  INFO(e);
  CHECK(e.rfind("softmax_attention: ", 0) == 0);
  CHECK(e.find("ran out of memory") != std::string::npos);
  CHECK(e.find("3200480008 bytes") != std::string::npos);
  next_call_works();
#endif
}
