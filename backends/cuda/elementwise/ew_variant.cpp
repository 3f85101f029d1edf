// STRATA_EW_VARIANT (elementwise_cuda.hpp), read once: launch_elementwise
// asks on every call with a transposed 16-bit input. tiled16 is the default
// since run s12r1 (docs/ops-log.md: bf16 add with one transposed input 1.32 ->
// 3.52 TB/s); base keeps the generic tiled path for A/B runs.
#include <cstdlib>
#include <string_view>

#include "cuda/elementwise/elementwise_cuda.hpp"
#include "strata/error.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {

bool ew_variant_tiled16() {
  // The switchboard has checked the name: "", tiled16 or base.
  return tuning().ew_variant != "base";
}

}  // namespace strata::cuda
