#pragma once
// Host-side entry points of the cuda backend, free of CUDA headers so that
// register.cpp compiles as plain C++: the device runtime here, the
// softmax_attention kernels in attention/dispatch/entry_points.hpp.
#include <memory>
#include <string>

#include "cuda/attention/dispatch/entry_points.hpp"
#include "strata/device_runtime.hpp"

namespace strata::cuda {

// Number of usable devices; on 0, *why says why (no driver, no device).
int probe_devices(std::string* why);
std::unique_ptr<DeviceRuntime> make_runtime();

// Multiprocessors of the current device, cached per device (the launchers
// size their grids by it; elementwise/ew_misc.cu).
int sm_count();

}  // namespace strata::cuda
