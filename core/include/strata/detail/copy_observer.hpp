#pragma once
// A seam for whatever wants to see the copies core makes (Tensor::copy_from
// and everything built on it: clone, contiguous, to, fill, reshape_copy).
// Autograd's recording tape (ops/) installs itself here so that a gradient
// flows through a clone() or a to(DType) like through any op; core knows
// nothing of autograd. With no observer installed a copy pays one
// thread-local load.
namespace strata {
class Tensor;
}

namespace strata::detail {

class CopyObserver {
 public:
  // `dst` now holds `src` (broadcast to dst's shape, converted to dst's
  // dtype). Called once per outermost copy, after it succeeded, on the
  // thread that copied.
  virtual void copied(const Tensor& dst, const Tensor& src) = 0;

 protected:
  ~CopyObserver() = default;
};

// This thread's observer, or nullptr.
CopyObserver* copy_observer() noexcept;
// Installs `o` (nullptr: none) for this thread; returns the one it replaces.
CopyObserver* set_copy_observer(CopyObserver* o) noexcept;

}  // namespace strata::detail
