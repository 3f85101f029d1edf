// STRATA_ROWS_VARIANT (rows_variant.hpp), read once: the row launchers of a
// tuning build ask for it on every 16-bit call, so it must cost no
// environment lookup.
#include "cuda/rows/rows_variant.hpp"

#include <string>

#include "cuda/tuning_build.hpp"
#include "strata/error.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {

namespace {

constexpr RowsVariant kAll[] = {RowsVariant::tuned, RowsVariant::base, RowsVariant::fused,
                                RowsVariant::reg,   RowsVariant::reg4, RowsVariant::reg8};

RowsVariant parse(const std::string& name) {
  if (name.empty()) return RowsVariant::tuned;
  for (RowsVariant v : kAll)
    if (name == rows_variant_name(v)) {
      if (v != RowsVariant::tuned) require_tuning_build("STRATA_ROWS_VARIANT", name);
      return v;
    }
  fail("cuda.rows", "STRATA_ROWS_VARIANT is '", name,
       "'; expected tuned, or in a tuning build base, fused, reg, reg4 or reg8");
}

}  // namespace

const char* rows_variant_name(RowsVariant v) {
  constexpr const char* kNames[] = {"tuned", "base", "fused",
                                    "reg",   "reg4", "reg8"};  // RowsVariant's order
  return kNames[static_cast<int>(v)];
}

RowsVariant rows_variant() {
  static const RowsVariant v = parse(tuning().rows_variant);
  return v;
}

// Testing hook for tests/cuda/test_cuda_variants.cpp (declared there): the
// variant this process runs.
const char* rows_variant_for_test() { return rows_variant_name(rows_variant()); }

}  // namespace strata::cuda
