#pragma once
// Host-side entry points of the cuda backend, free of CUDA headers so that
// register.cpp compiles as plain C++.
#include <memory>
#include <string>

#include "strata/attention_args.hpp"
#include "strata/device_runtime.hpp"

namespace strata::cuda {

// Number of usable devices; on 0, *why says why (no driver, no device).
int probe_devices(std::string* why);
std::unique_ptr<DeviceRuntime> make_runtime();

// softmax_attention kernels (attention_launch.cu). Arguments come validated
// from the front end, with device pointers.
void attention_f32(const AttentionArgs& a);
void attention_f64(const AttentionArgs& a);
// "" when the cuda kernels can run `a`, else the reason.
std::string attention_supports(const AttentionArgs& a);
// Kernel variant the launcher would pick (for docs/bench labels).
std::string attention_plan(const AttentionArgs& a);

}  // namespace strata::cuda
