#pragma once
// Tensor: a cheap value-type view of a Storage. Shape, strides and offset are
// counted in elements (never bytes); strides may be zero (broadcast) or
// negative (flipped views). Every view is checked against its storage's
// extent when it is made, so a kernel can trust any tensor it is handed.
// Only this class turns element offsets into byte addresses.
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/device.hpp"
#include "strata/device_runtime.hpp"
#include "strata/dtype.hpp"
#include "strata/error.hpp"
#include "strata/operand.hpp"
#include "strata/shape.hpp"
#include "strata/storage.hpp"

namespace strata {

// Python-style slice bounds: negative indices count from the end, missing
// bounds mean "from the start / to the end" in the direction of `step`.
// Unlike Python, a given bound outside [-n, n] throws instead of clamping.
struct Slice {
  std::optional<std::int64_t> start;
  std::optional<std::int64_t> stop;
  std::int64_t step = 1;
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor; defined() is false

  // ---- factories ---------------------------------------------------------
  static Tensor empty(const Shape& shape, DType dt = DType::f32, Device dev = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dt = DType::f32, Device dev = Device::cpu());
  static Tensor ones(const Shape& shape, DType dt = DType::f32, Device dev = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dt = DType::f32,
                     Device dev = Device::cpu());
  // [0, 1, ..., n-1]
  static Tensor arange(std::int64_t n, DType dt = DType::f32, Device dev = Device::cpu());
  // Counter-based (seed, element index) generator: the same values on every
  // backend, platform and device for the same seed and shape.
  static Tensor rand(const Shape& shape, std::uint64_t seed, DType dt = DType::f32,
                     Device dev = Device::cpu());  // uniform [0, 1)
  static Tensor randn(const Shape& shape, std::uint64_t seed, DType dt = DType::f32,
                      Device dev = Device::cpu());  // standard normal
  // A view of existing storage; checked against the storage's extent.
  static Tensor from_storage(std::shared_ptr<Storage> storage, const Shape& shape,
                             const Shape& strides, std::int64_t offset, DType dt);
  // Row-major copy of `values` into a new tensor on `dev`.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                            Device dev = Device::cpu());

  // ---- metadata ----------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  int dim() const { return static_cast<int>(shape_.size()); }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  std::int64_t size(int d) const;    // d may be negative
  std::int64_t stride(int d) const;  // d may be negative
  std::int64_t offset() const { return offset_; }
  std::int64_t numel() const;
  DType dtype() const { return dtype_; }
  Device device() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool is_contiguous() const;  // row-major, unit innermost stride, no gaps
  // Byte address of element [0, ..., 0] (storage base + offset * itemsize).
  void* data_ptr() const;
  template <class T>
  T* data() const;  // checks dtype_of<T> == dtype()
  // Byte range [lo, hi) of the storage this view can touch; {0,0} if empty.
  std::pair<std::int64_t, std::int64_t> byte_extent() const;
  // The plain view a kernel receives (data already offset; see operand.hpp).
  Operand operand() const;
  // Wraps dim `d` (negative allowed) into [0, dim()); throws naming `op`.
  int wrap_dim(int d, const char* op) const;

  // ---- views (never copy) -------------------------------------------------
  Tensor slice(int dim, Slice s) const;
  Tensor slice(int dim, std::int64_t start, std::int64_t stop, std::int64_t step = 1) const;
  Tensor select(int dim, std::int64_t index) const;  // drops `dim`
  Tensor narrow(int dim, std::int64_t start, std::int64_t length) const;
  Tensor transpose(int d0, int d1) const;
  Tensor permute(const std::vector<int>& dims) const;
  Tensor unsqueeze(int dim) const;
  Tensor squeeze(int dim) const;            // error unless size(dim) == 1
  Tensor squeeze() const;                   // drops every size-1 dim
  Tensor expand(const Shape& shape) const;  // NumPy broadcasting, -1 keeps a dim
  Tensor flip(int dim) const;
  // A view when the strides allow it (one -1 entry infers a size); else
  // throws strata::Error pointing at reshape_copy().
  Tensor reshape(const Shape& shape) const;
  Tensor reshape_copy(const Shape& shape) const;  // always a fresh tensor
  Tensor as_strided(const Shape& shape, const Shape& strides,
                    std::optional<std::int64_t> offset = std::nullopt) const;

  // ---- copies -------------------------------------------------------------
  Tensor contiguous() const;    // self when already contiguous
  Tensor clone() const;         // always a fresh contiguous tensor
  Tensor to(Device dev) const;  // self when already there
  Tensor to(DType dt) const;    // converting copy (host-side conversion); self when already dt
  // Copies `src` into this view, broadcasting src to our shape; any layouts,
  // any devices, same dtype. Returns *this.
  const Tensor& copy_from(const Tensor& src) const;
  void fill(double value) const;

  // ---- element access (tests, small tools) ---------------------------------
  // Small reads, on any view and any device (a device tensor copies the one
  // element back through its DeviceRuntime). T is double by default, or any
  // arithmetic type: integer dtypes convert exactly, a floating value to an
  // integer T truncates, and a value outside T's range (or NaN/inf into an
  // integer) is a strata::Error, as is a bad index or tensor.
  // The only element of a tensor with numel() == 1, whatever its rank.
  template <class T = double>
  T item() const;
  // One element; negative indices count from the end, as in Python.
  template <class T = double>
  T at(const std::vector<std::int64_t>& index) const;
  // at(index) as double under its older name; set_item writes one element.
  double item(const std::vector<std::int64_t>& index) const;
  void set_item(const std::vector<std::int64_t>& index, double value) const;
  // Every element in row-major logical order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;

  std::string str(std::int64_t max_values = 64) const;  // shape, strides, dtype, device, values

 private:
  Tensor(std::shared_ptr<Storage> s, Shape shape, Shape strides, std::int64_t offset, DType dt);
  void check_bounds(const char* op) const;
  void copy_unobserved(const Tensor& src) const;  // copy_from without telling the observer
  // One element, checked as item() (index null) or at(*index) would, as a
  // double, or as an exact integer (a floating value truncated, after a
  // range check); `op` names the caller in errors.
  double read_double(const std::vector<std::int64_t>* index, const char* op) const;
  std::int64_t read_int64(const std::vector<std::int64_t>* index, const char* op) const;
  template <class T>
  T read_as(const std::vector<std::int64_t>* index, const char* op) const;
  Tensor with_layout(Shape shape, Shape strides, std::int64_t offset, const char* op) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  std::int64_t offset_ = 0;
  DType dtype_ = DType::f32;

  friend bool may_overlap(const Tensor& a, const Tensor& b);
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// True when a and b share storage and their byte extents intersect (a
// conservative test: interleaved but disjoint views also report true).
bool may_overlap(const Tensor& a, const Tensor& b);

// NumPy broadcast of two shapes; throws naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
std::string shape_str(const Shape& s);  // "[2, 3, 4]"
std::int64_t shape_numel(const Shape& s);

// ---- template definitions -------------------------------------------------
template <class T>
T* Tensor::data() const {
  check(dtype_of_v<T> == dtype_, "Tensor::data", "asked for ", dtype_name(dtype_of_v<T>),
        " but tensor is ", dtype_name(dtype_));
  return static_cast<T*>(data_ptr());
}

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device dev) {
  check(static_cast<std::int64_t>(values.size()) == shape_numel(shape), "Tensor::from_vector",
        "values has ", values.size(), " elements but shape ", shape_str(shape), " needs ",
        shape_numel(shape));
  Tensor host = empty(shape, dtype_of_v<T>, Device::cpu());
  T* p = host.data<T>();
  for (std::size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return host.to(dev);
}

template <class T>
T Tensor::read_as(const std::vector<std::int64_t>* index, const char* op) const {
  static_assert(std::is_arithmetic_v<T>, "item<T>/at<T>: T must be bool, an integer or a float");
  if constexpr (std::is_same_v<T, bool>) {
    return read_double(index, op) != 0.0;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (dtype_ == DType::i64) return static_cast<T>(read_int64(index, op));
    return static_cast<T>(read_double(index, op));
  } else {
    const std::int64_t v = read_int64(index, op);
    if (!std::in_range<T>(v))
      fail(op, "value ", v, " of the ", dtype_name(dtype_), " element does not fit the ",
           sizeof(T) * 8, "-bit ", std::is_signed_v<T> ? "signed" : "unsigned",
           " integer type asked for");
    return static_cast<T>(v);
  }
}

template <class T>
T Tensor::item() const {
  return read_as<T>(nullptr, "Tensor::item");
}

template <class T>
T Tensor::at(const std::vector<std::int64_t>& index) const {
  return read_as<T>(&index, "Tensor::at");
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = to(Device::cpu()).contiguous();
  std::vector<T> out(static_cast<std::size_t>(host.numel()));
  const char* base = static_cast<const char*>(host.data_ptr());
  const std::size_t isz = itemsize(dtype_);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      out[i] = load_as_double(base + i * isz, dtype_) != 0.0;
    } else {
      out[i] = static_cast<T>(load_as_double(base + i * isz, dtype_));
    }
  }
  return out;
}

}  // namespace strata
