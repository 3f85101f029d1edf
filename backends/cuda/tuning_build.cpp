// Testing hook for the tests of the lab candidates (tests/cuda/
// test_cuda_variants.cpp and others declare it): whether this build has
// them (tuning_build.hpp); their tests skip themselves otherwise.
#include "cuda/tuning_build.hpp"

namespace strata::cuda {

bool tuning_build_for_test() { return kTuningBuild; }

}  // namespace strata::cuda
