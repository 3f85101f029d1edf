#pragma once
// Graph captures in progress and streams alive, kept by the runtime
// (cuda_runtime.cu: begin_capture to end_capture / abort_capture,
// create_stream to destroy_stream) and read by the launchers
// (launch_mode.cuh: thread_capturing) and by device memory, whose block cache
// stands aside while any capture runs or while two streams of the caller's
// are alive (device_memory.cu).
namespace strata::cuda {

// This thread began a capture.
void capture_begun() noexcept;
// This thread's capture ended or was aborted (nothing when none is open).
void capture_finished() noexcept;
// A capture is open on this thread or on any other.
bool any_capture_open() noexcept;

// Streams made by DeviceRuntime::create_stream and not yet destroyed.
int streams_alive() noexcept;

}  // namespace strata::cuda
