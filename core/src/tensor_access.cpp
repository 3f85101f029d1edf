// Element access and printing: slow, simple, for tests and small tools.
#include <cmath>
#include <cstring>
#include <ostream>
#include <sstream>

#include "strata/tensor.hpp"

namespace strata {

namespace {

// Element offset of `index` (negative entries count from the end), checked;
// with no index, of the only element of a one-element tensor.
std::int64_t element_offset(const Tensor& t, const std::vector<std::int64_t>* index,
                            const char* op) {
  STRATA_CHECK(t.defined(), op, "tensor is undefined");
  if (index == nullptr) {
    STRATA_CHECK(t.numel() == 1, op, "needs a tensor of exactly one element, but shape ",
                 shape_str(t.shape()), " has ", t.numel(), " (read one with at(index))");
    return t.offset();  // every dim has size 1: index [0, ..., 0]
  }
  STRATA_CHECK(static_cast<int>(index->size()) == t.dim(), op, "index ", shape_str(*index), " has ",
               index->size(), " entries for a ", t.dim(), "-d tensor of shape ",
               shape_str(t.shape()));
  std::int64_t off = t.offset();
  for (int d = 0; d < t.dim(); ++d) {
    const std::int64_t n = t.shape()[d], i = (*index)[d];
    STRATA_CHECK(i >= -n && i < n, op, "index ", i, " out of range for dim ", d, " of size ", n,
                 " (index ", shape_str(*index), ", shape ", shape_str(t.shape()), ")");
    off += (i < 0 ? i + n : i) * t.strides()[d];
  }
  return off;
}

// One element's bytes: direct on the host, a one-item copy from a device.
char* element_address(const Tensor& t, std::int64_t off) {
  return static_cast<char*>(t.storage()->data()) +
         off * static_cast<std::int64_t>(itemsize(t.dtype()));
}

DeviceRuntime& runtime_of(Device dev, const char* op) {
  DeviceRuntime* rt = device_runtime(dev.type);
  STRATA_CHECK(rt != nullptr, op, device_type_name(dev.type), " backend not built (device ",
               dev.str(), ")");
  return *rt;
}

void print_values(std::ostream& os, const Tensor& host, int d, std::int64_t off,
                  std::int64_t* budget) {
  if (d == host.dim()) {
    if (*budget <= 0) return;
    --*budget;
    os << load_as_double(element_address(host, off), host.dtype());
    return;
  }
  os << '[';
  const std::int64_t n = host.shape()[d];
  for (std::int64_t i = 0; i < n; ++i) {
    if (*budget <= 0) {
      os << (i ? ", ..." : "...");
      break;
    }
    if (i)
      os << (d + 1 < host.dim() ? ",\n" + std::string(static_cast<std::size_t>(d) + 1, ' ') : ", ");
    print_values(os, host, d + 1, off + i * host.strides()[d], budget);
  }
  os << ']';
}

// The element's bytes in `buf` (8 bytes): read directly on the host, copied
// back through the device's runtime otherwise.
void read_element(const Tensor& t, std::int64_t off, unsigned char* buf, const char* op) {
  if (t.device().is_cpu()) {
    std::memcpy(buf, element_address(t, off), itemsize(t.dtype()));
    return;
  }
  runtime_of(t.device(), op)
      .copy_bytes(buf, Device::cpu(), element_address(t, off), t.device(), itemsize(t.dtype()));
}

}  // namespace

double Tensor::read_double(const std::vector<std::int64_t>* index, const char* op) const {
  unsigned char buf[8];
  read_element(*this, element_offset(*this, index, op), buf, op);
  return load_as_double(buf, dtype_);
}

std::int64_t Tensor::read_int64(const std::vector<std::int64_t>* index, const char* op) const {
  unsigned char buf[8];
  read_element(*this, element_offset(*this, index, op), buf, op);
  if (dtype_ == DType::i64) {  // exact beyond 2^53, where a double is not
    std::int64_t v;
    std::memcpy(&v, buf, sizeof v);
    return v;
  }
  const double v = load_as_double(buf, dtype_);  // exact for bool and i32
  // [-2^63, 2^63): the doubles whose truncation an int64 holds.
  STRATA_CHECK(std::isfinite(v) && v >= -0x1p63 && v < 0x1p63, op, "value ", v, " of the ",
               dtype_name(dtype_), " element does not fit a 64-bit integer");
  return static_cast<std::int64_t>(v);
}

double Tensor::item(const std::vector<std::int64_t>& index) const {
  return read_double(&index, "Tensor::item");
}

void Tensor::set_item(const std::vector<std::int64_t>& index, double value) const {
  const char* op = "Tensor::set_item";
  const std::int64_t off = element_offset(*this, &index, op);
  if (device().is_cpu()) {
    store_from_double(element_address(*this, off), dtype_, value);
    return;
  }
  unsigned char buf[8];
  store_from_double(buf, dtype_, value);
  runtime_of(device(), op)
      .copy_bytes(element_address(*this, off), device(), buf, Device::cpu(), itemsize(dtype_));
}

std::string Tensor::str(std::int64_t max_values) const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(shape=" << shape_str(shape_) << ", strides=" << shape_str(strides_)
     << ", offset=" << offset_ << ", dtype=" << dtype_name(dtype_) << ", device=" << device().str()
     << ")\n";
  const Tensor host = to(Device::cpu());  // printing is for small tensors
  std::int64_t budget = max_values;
  print_values(os, host, 0, host.offset(), &budget);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace strata
