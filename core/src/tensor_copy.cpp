// Copies between any two layouts and devices. The host path is a strided
// loop here in core; anything touching another device goes through that
// device's DeviceRuntime (contiguous byte copies across devices, strided
// copies within one device).
#include <cstring>

#include "strata/detail/copy_observer.hpp"
#include "strata/tensor.hpp"

namespace strata {

namespace detail {
namespace {
thread_local CopyObserver* t_copy_observer = nullptr;
}  // namespace
CopyObserver* copy_observer() noexcept { return t_copy_observer; }
CopyObserver* set_copy_observer(CopyObserver* o) noexcept {
  CopyObserver* old = t_copy_observer;
  t_copy_observer = o;
  return old;
}
}  // namespace detail

namespace {

// Copies nest (copy_from packs through clone, to(DType) through to(Device)):
// only the outermost one is reported to the observer.
thread_local int t_copy_depth = 0;
class ObservedCopy {
 public:
  ObservedCopy() { ++t_copy_depth; }
  ~ObservedCopy() { --t_copy_depth; }
  ObservedCopy(const ObservedCopy&) = delete;
  ObservedCopy& operator=(const ObservedCopy&) = delete;
  void done(const Tensor& dst, const Tensor& src) const {
    if (t_copy_depth != 1) return;
    if (detail::CopyObserver* o = detail::copy_observer()) o->copied(dst, src);
  }
};

DeviceRuntime& runtime_of(Device dev, const char* op) {
  DeviceRuntime* rt = device_runtime(dev.type);
  STRATA_CHECK(rt != nullptr, op, device_type_name(dev.type), " backend not built (device ",
               dev.str(), ")");
  return *rt;
}

// dst[i] = src[i] over `shape` for elements of N bytes; both pointers address
// element [0, ..., 0], strides in elements. memcpy because wrapped caller
// memory need not be aligned.
template <std::size_t N>
void host_copy_n(char* dst, const std::int64_t* dstr, const char* src, const std::int64_t* sstr,
                 const std::int64_t* shape, int rank) {
  if (rank == 0) {
    std::memcpy(dst, src, N);
    return;
  }
  const int last = rank - 1;
  const std::int64_t n = shape[last];
  const std::int64_t dinner = dstr[last] * static_cast<std::int64_t>(N);
  const std::int64_t sinner = sstr[last] * static_cast<std::int64_t>(N);
  std::int64_t idx[kMaxDims] = {};
  std::int64_t doff = 0, soff = 0;  // byte offsets of the current row
  for (;;) {
    char* d = dst + doff;
    const char* s = src + soff;
    for (std::int64_t i = 0; i < n; ++i) std::memcpy(d + i * dinner, s + i * sinner, N);
    // Odometer over the outer dims.
    int k = last - 1;
    for (; k >= 0; --k) {
      doff += dstr[k] * static_cast<std::int64_t>(N);
      soff += sstr[k] * static_cast<std::int64_t>(N);
      if (++idx[k] < shape[k]) break;
      doff -= dstr[k] * shape[k] * static_cast<std::int64_t>(N);
      soff -= sstr[k] * shape[k] * static_cast<std::int64_t>(N);
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

// Both on the host, same shape (src already broadcast), same dtype, non-empty.
void host_copy(const Tensor& dst, const Tensor& src) {
  const std::size_t isz = itemsize(dst.dtype());
  if (dst.is_contiguous() && src.is_contiguous()) {
    std::memmove(dst.data_ptr(), src.data_ptr(), static_cast<std::size_t>(dst.numel()) * isz);
    return;
  }
  char* d = static_cast<char*>(dst.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  if (dst.numel() == 0) return;
  // A size-1 dim's stride is never used and so is not bounded by the extent
  // check: read it as 0, so that stride * itemsize cannot overflow.
  std::int64_t ds[kMaxDims], ss[kMaxDims];
  const auto* sh = dst.shape().data();
  const int r = dst.dim();
  for (int i = 0; i < r; ++i) {
    ds[i] = sh[i] == 1 ? 0 : dst.strides()[i];
    ss[i] = sh[i] == 1 ? 0 : src.strides()[i];
  }
  switch (isz) {
    case 1:
      return host_copy_n<1>(d, ds, s, ss, sh, r);
    case 2:
      return host_copy_n<2>(d, ds, s, ss, sh, r);
    case 4:
      return host_copy_n<4>(d, ds, s, ss, sh, r);
    case 8:
      return host_copy_n<8>(d, ds, s, ss, sh, r);
    default:
      fail("Tensor::copy_from", "unsupported item size ", isz);
  }
}

bool same_layout(const Tensor& a, const Tensor& b) {
  return a.storage()->data() == b.storage()->data() && a.offset() == b.offset() &&
         a.shape() == b.shape() && a.strides() == b.strides();
}

}  // namespace

const Tensor& Tensor::copy_from(const Tensor& source) const {
  const ObservedCopy observed;
  copy_unobserved(source);
  observed.done(*this, source);
  return *this;
}

void Tensor::copy_unobserved(const Tensor& source) const {
  const char* op = "Tensor::copy_from";
  STRATA_CHECK(defined(), op, "destination is undefined");
  STRATA_CHECK(source.defined(), op, "source is undefined");
  STRATA_CHECK(source.dtype() == dtype_, op, "source dtype ", dtype_name(source.dtype()),
               " differs from destination dtype ", dtype_name(dtype_),
               "; convert with to(DType) first");
  Tensor src;
  try {
    src = source.expand(shape_);
  } catch (const Error&) {
    fail(op, "cannot broadcast source shape ", shape_str(source.shape()), " to destination shape ",
         shape_str(shape_));
  }
  if (numel() == 0 || same_layout(*this, src)) return;
  // A source that shares bytes with us could be overwritten before it is read.
  if (may_overlap(*this, src)) src = src.clone();

  const Device dd = device(), sd = src.device();
  if (dd.is_cpu() && sd.is_cpu()) {
    host_copy(*this, src);
    return;
  }
  if (dd == sd) {
    DeviceRuntime& rt = runtime_of(dd, op);
    if (is_contiguous() && src.is_contiguous()) {
      rt.copy_bytes(data_ptr(), dd, src.data_ptr(), sd,
                    static_cast<std::size_t>(numel()) * itemsize(dtype_));
    } else {
      rt.copy_strided(operand(), src.operand(), dtype_, dd);
    }
    return;
  }
  // Across devices: make the source contiguous where it lives, move the bytes,
  // then scatter into our layout on our own device.
  const Tensor packed = src.contiguous();
  if (!dd.is_cpu() && !sd.is_cpu() && dd.type != sd.type) {  // no runtime spans two kinds
    copy_from(packed.to(Device::cpu()));
    return;
  }
  const Tensor target = is_contiguous() ? *this : Tensor::empty(shape_, dtype_, dd);
  DeviceRuntime& rt = runtime_of(dd.is_cpu() ? sd : dd, op);
  rt.copy_bytes(target.data_ptr(), dd, packed.data_ptr(), sd,
                static_cast<std::size_t>(numel()) * itemsize(dtype_));
  if (!is_contiguous()) copy_from(target);
}

Tensor Tensor::contiguous() const {
  STRATA_CHECK(defined(), "Tensor::contiguous", "tensor is undefined");
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  STRATA_CHECK(defined(), "Tensor::clone", "tensor is undefined");
  Tensor out = empty(shape_, dtype_, device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(Device dev) const {
  STRATA_CHECK(defined(), "Tensor::to", "tensor is undefined");
  if (dev == device()) return *this;
  Tensor out = empty(shape_, dtype_, dev);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(DType dt) const {
  STRATA_CHECK(defined(), "Tensor::to", "tensor is undefined");
  if (dt == dtype_) return *this;
  const ObservedCopy observed;
  const Tensor src = to(Device::cpu()).contiguous();
  Tensor out = empty(shape_, dt, Device::cpu());
  const char* s = static_cast<const char*>(src.data_ptr());
  char* d = static_cast<char*>(out.data_ptr());
  const std::size_t si = itemsize(dtype_), di = itemsize(dt);
  const auto n = static_cast<std::size_t>(numel());
  for (std::size_t i = 0; i < n; ++i)
    store_from_double(d + i * di, dt, load_as_double(s + i * si, dtype_));
  Tensor result = out.to(device());
  observed.done(result, *this);
  return result;
}

void Tensor::fill(double value) const {
  STRATA_CHECK(defined(), "Tensor::fill", "tensor is undefined");
  Tensor one = empty({}, dtype_, Device::cpu());
  store_from_double(one.data_ptr(), dtype_, value);
  copy_from(one);
}

}  // namespace strata
