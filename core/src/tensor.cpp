// Tensor metadata, bounds checking and the plain factories.
#include "strata/tensor.hpp"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <utility>

#include "strata/detail/checked_math.hpp"

namespace strata {

namespace {

// Element range [lo, hi) a non-empty layout touches, relative to the storage
// start; false when the arithmetic overflows int64.
bool element_extent(const Shape& shape, const Shape& strides, std::int64_t offset, std::int64_t* lo,
                    std::int64_t* hi) {
  std::int64_t l = offset, h = offset;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    std::int64_t reach;
    if (!detail::mul_ok(shape[d] - 1, strides[d], &reach)) return false;
    if (!detail::add_ok(reach < 0 ? l : h, reach, reach < 0 ? &l : &h)) return false;
  }
  if (!detail::add_ok(h, 1, &h)) return false;
  *lo = l;
  *hi = h;
  return true;
}

bool has_zero(const Shape& s) { return std::find(s.begin(), s.end(), 0) != s.end(); }

// Row-major strides; a size-0 dim counts as 1 so strides stay distinct.
Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  std::int64_t run = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = run;
    run *= std::max<std::int64_t>(shape[i], 1);
  }
  return strides;
}

// Rejects what no tensor may have: too many dims, negative sizes, and element
// or byte counts that overflow. Returns numel.
std::int64_t validate_new_shape(const Shape& shape, DType dt, const char* op) {
  STRATA_CHECK(shape.size() <= static_cast<std::size_t>(kMaxDims), op, "shape ", shape_str(shape),
               " has ", shape.size(), " dims; at most ", kMaxDims, " are supported");
  std::int64_t span = 1;  // product with 0 read as 1: the largest stride we will form
  for (std::int64_t s : shape) {
    STRATA_CHECK(s >= 0, op, "negative size ", s, " in shape ", shape_str(shape));
    span = detail::mul_or_fail(
        span, std::max<std::int64_t>(s, 1), op, " (shape ", [&] { return shape_str(shape); }, ")");
  }
  detail::mul_or_fail(
      span, static_cast<std::int64_t>(itemsize(dt)), op, " (bytes of shape ",
      [&] { return shape_str(shape); }, ")");
  return has_zero(shape) ? 0 : span;
}

}  // namespace

// ---- free helpers -------------------------------------------------------------

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

std::int64_t shape_numel(const Shape& s) {
  for (std::int64_t v : s)
    STRATA_CHECK(v >= 0, "shape_numel", "negative size ", v, " in shape ", shape_str(s));
  if (has_zero(s)) return 0;
  // numel() runs on every op call: the message is built only on overflow.
  std::int64_t n = 1;
  for (std::int64_t v : s) {
    std::int64_t r;
    if (!detail::mul_ok(n, v, &r))
      fail("shape_numel", "int64 overflow computing ", n, " * ", v, " (shape ", shape_str(s), ")");
    n = r;
  }
  return n;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    STRATA_CHECK(x == y || x == 1 || y == 1, op, "shapes ", shape_str(a), " and ", shape_str(b),
                 " cannot be broadcast (", x, " vs ", y, " in dim ", i, " of the result)");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.numel() == 0 || b.numel() == 0) return false;
  if (!(a.device() == b.device())) return false;
  // Compare addresses, not Storage objects: two wraps of one buffer alias too.
  const auto base = [](const Tensor& t) {
    return reinterpret_cast<std::uintptr_t>(t.storage()->data());
  };
  const auto [alo, ahi] = a.byte_extent();
  const auto [blo, bhi] = b.byte_extent();
  const std::uintptr_t a0 = base(a) + static_cast<std::uintptr_t>(alo);
  const std::uintptr_t a1 = base(a) + static_cast<std::uintptr_t>(ahi);
  const std::uintptr_t b0 = base(b) + static_cast<std::uintptr_t>(blo);
  const std::uintptr_t b1 = base(b) + static_cast<std::uintptr_t>(bhi);
  return a0 < b1 && b0 < a1;
}

// ---- construction and checks ----------------------------------------------------

Tensor::Tensor(std::shared_ptr<Storage> s, Shape shape, Shape strides, std::int64_t offset,
               DType dt)
    : storage_(std::move(s)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dt) {}

void Tensor::check_bounds(const char* op) const {
  STRATA_CHECK(storage_ != nullptr, op, "tensor is undefined");
  STRATA_CHECK(shape_.size() <= static_cast<std::size_t>(kMaxDims), op, "shape ", shape_str(shape_),
               " has ", shape_.size(), " dims; at most ", kMaxDims, " are supported");
  STRATA_CHECK(shape_.size() == strides_.size(), op, "shape ", shape_str(shape_), " has ",
               shape_.size(), " dims but strides ", shape_str(strides_), " has ", strides_.size());
  for (std::int64_t s : shape_)
    STRATA_CHECK(s >= 0, op, "negative size ", s, " in shape ", shape_str(shape_));
  STRATA_CHECK(offset_ >= 0, op, "negative offset ", offset_);
  if (has_zero(shape_)) return;  // an empty view touches nothing
  std::int64_t lo = 0, hi = 0;
  STRATA_CHECK(element_extent(shape_, strides_, offset_, &lo, &hi), op, "extent of shape ",
               shape_str(shape_), " strides ", shape_str(strides_), " offset ", offset_,
               " overflows int64");
  const auto capacity = static_cast<std::int64_t>(storage_->nbytes() / itemsize(dtype_));
  STRATA_CHECK(lo >= 0, op, "view of shape ", shape_str(shape_), " strides ", shape_str(strides_),
               " offset ", offset_, " reaches element ", lo, ", before the start of its storage");
  STRATA_CHECK(hi <= capacity, op, "view of shape ", shape_str(shape_), " strides ",
               shape_str(strides_), " offset ", offset_, " reaches element ", hi - 1,
               " but the storage holds ", capacity, " ", dtype_name(dtype_), " elements");
}

Tensor Tensor::with_layout(Shape shape, Shape strides, std::int64_t offset, const char* op) const {
  STRATA_CHECK(defined(), op, "tensor is undefined");
  Tensor t(storage_, std::move(shape), std::move(strides), offset, dtype_);
  t.check_bounds(op);
  return t;
}

Operand Tensor::operand() const {
  // Every view is capped at kMaxDims when it is made, so this always fits.
  Operand l;
  l.data = data_ptr();
  l.dtype = dtype_;
  l.rank = dim();
  for (int d = 0; d < dim(); ++d) {
    l.shape[d] = shape_[d];
    l.strides[d] = strides_[d];
  }
  return l;
}

// ---- metadata ---------------------------------------------------------------------

int Tensor::wrap_dim(int d, const char* op) const {
  const int n = dim();
  STRATA_CHECK(d >= -n && d < n, op, "dim ", d, " out of range for a ", n, "-d tensor of shape ",
               shape_str(shape_));
  return d < 0 ? d + n : d;
}

std::int64_t Tensor::size(int d) const { return shape_[wrap_dim(d, "Tensor::size")]; }
std::int64_t Tensor::stride(int d) const { return strides_[wrap_dim(d, "Tensor::stride")]; }
std::int64_t Tensor::numel() const { return shape_numel(shape_); }
Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

bool Tensor::is_contiguous() const {
  if (has_zero(shape_)) return true;
  std::int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;  // a size-1 dim's stride is never used
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  if (!storage_) return nullptr;
  char* base = static_cast<char*>(storage_->data());
  if (base == nullptr) return nullptr;
  const auto isz = static_cast<std::int64_t>(itemsize(dtype_));
  // An empty view may carry any offset; never form a pointer past its storage.
  if (has_zero(shape_)) {
    std::int64_t bytes = 0;
    if (!detail::mul_ok(offset_, isz, &bytes) ||
        bytes > static_cast<std::int64_t>(storage_->nbytes()))
      return base;
  }
  return base + offset_ * isz;
}

std::pair<std::int64_t, std::int64_t> Tensor::byte_extent() const {
  if (!storage_ || has_zero(shape_)) return {0, 0};
  std::int64_t lo = 0, hi = 0;
  element_extent(shape_, strides_, offset_, &lo, &hi);  // checked when the view was made
  const auto isz = static_cast<std::int64_t>(itemsize(dtype_));
  return {lo * isz, hi * isz};
}

// ---- factories ----------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dt, Device dev) {
  const std::int64_t n = validate_new_shape(shape, dt, "Tensor::empty");
  auto storage = Storage::allocate(static_cast<std::size_t>(n) * itemsize(dt), dev);
  return Tensor(std::move(storage), shape, contiguous_strides(shape), 0, dt);
}

Tensor Tensor::zeros(const Shape& shape, DType dt, Device dev) { return full(shape, 0.0, dt, dev); }
Tensor Tensor::ones(const Shape& shape, DType dt, Device dev) { return full(shape, 1.0, dt, dev); }

Tensor Tensor::full(const Shape& shape, double value, DType dt, Device dev) {
  Tensor t = empty(shape, dt, dev);
  t.fill(value);
  return t;
}

Tensor Tensor::arange(std::int64_t n, DType dt, Device dev) {
  STRATA_CHECK(n >= 0, "Tensor::arange", "negative length ", n);
  Tensor host = empty({n}, dt, Device::cpu());
  char* p = static_cast<char*>(host.data_ptr());
  const std::size_t isz = itemsize(dt);
  for (std::int64_t i = 0; i < n; ++i)
    store_from_double(p + static_cast<std::size_t>(i) * isz, dt, static_cast<double>(i));
  return host.to(dev);
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const Shape& shape,
                            const Shape& strides, std::int64_t offset, DType dt) {
  STRATA_CHECK(storage != nullptr, "Tensor::from_storage", "storage is null");
  Tensor t(std::move(storage), shape, strides, offset, dt);
  t.check_bounds("Tensor::from_storage");
  return t;
}

}  // namespace strata
