#pragma once
// Graph captures in progress, kept by the runtime (cuda_runtime.cu:
// DeviceRuntime::begin_capture to end_capture / abort_capture) and read by
// the launchers (launch_mode.cuh: thread_capturing) and by device memory,
// whose block cache stands aside while any capture runs.
namespace strata::cuda {

// This thread began a capture.
void capture_begun() noexcept;
// This thread's capture ended or was aborted (nothing when none is open).
void capture_finished() noexcept;
// A capture is open on this thread or on any other.
bool any_capture_open() noexcept;

}  // namespace strata::cuda
