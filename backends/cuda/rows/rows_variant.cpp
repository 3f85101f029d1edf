// STRATA_ROWS_VARIANT (rows_variant.hpp), read once: the row launchers ask
// for it on every call, so it must cost no environment lookup.
#include "cuda/rows/rows_variant.hpp"

#include <string>

#include "strata/error.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {

namespace {

constexpr RowsVariant kAll[] = {RowsVariant::tuned,  RowsVariant::base, RowsVariant::one,
                                RowsVariant::flat,   RowsVariant::warp, RowsVariant::fused,
                                RowsVariant::fusedw, RowsVariant::reg,  RowsVariant::reg4,
                                RowsVariant::reg8};

RowsVariant parse(const std::string& e) {
  if (e.empty()) return RowsVariant::tuned;
  for (RowsVariant v : kAll)
    if (e == rows_variant_name(v)) return v;
  fail("cuda.rows", "STRATA_ROWS_VARIANT is '", e,
       "'; expected tuned, base, one, flat, warp, fused, fusedw, reg, reg4 or reg8");
}

}  // namespace

const char* rows_variant_name(RowsVariant v) {
  constexpr const char* kNames[] = {"tuned",  "base", "one",  "flat", "warp", "fused",
                                    "fusedw", "reg",  "reg4", "reg8"};  // RowsVariant's order
  return kNames[static_cast<int>(v)];
}

RowsVariant rows_variant() {
  static const RowsVariant v = parse(tuning().rows_variant);
  return v;
}

// Testing hook for tests/cuda/test_cuda_rows_variants.cpp (declared there):
// the variant this process runs.
const char* rows_variant_for_test() { return rows_variant_name(rows_variant()); }

}  // namespace strata::cuda
