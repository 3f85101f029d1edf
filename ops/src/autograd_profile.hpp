#pragma once
// Per-op timing of a tape's backward (Tape::profile_backward): each node's
// backward timed between two synchronisations of the loss's device, summed
// by op name. The syncs stall the device's queue, so a profiled backward is
// slower than a plain one; it says where the time goes, not how long a step
// takes.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "strata/autograd.hpp"
#include "strata/device.hpp"

namespace strata::autograd {

class BackwardProfile {
 public:
  void start(Device dev) {
    on_ = true;
    dev_ = dev;
  }
  bool on() const { return on_; }
  // Times `run` (one node's backward of op `op`).
  template <class F>
  void time(const char* op, F&& run) {
    sync();
    const auto t0 = std::chrono::steady_clock::now();
    run();
    sync();
    OpTime& o = by_op_[op];
    o.ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++o.calls;
  }
  // Most time first.
  std::vector<OpTime> report() const;

 private:
  void sync() const;
  bool on_ = false;
  Device dev_ = Device::cpu();
  std::map<std::string, OpTime> by_op_;
};

}  // namespace strata::autograd
