#pragma once
// The cuda backend's launch switch (backends/cuda/launch_mode.cuh; that
// header needs nvcc): 0 pdl, 1 ex, 2 plain, 3 graph.
namespace strata::cuda {
enum class LaunchMode : int;
LaunchMode launch_mode();
void set_launch_mode(LaunchMode m);
}  // namespace strata::cuda
