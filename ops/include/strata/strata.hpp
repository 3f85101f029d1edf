#pragma once
// Umbrella header: everything a Strata user needs.
#include "strata/attention.hpp"
#include "strata/device.hpp"
#include "strata/dtype.hpp"
#include "strata/error.hpp"
#include "strata/registry.hpp"
#include "strata/storage.hpp"
#include "strata/tensor.hpp"
#include "strata/version.hpp"
