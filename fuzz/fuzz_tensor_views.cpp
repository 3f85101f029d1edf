// libFuzzer target: tensor view construction against a storage extent.
// Tensor::from_storage and as_strided with arbitrary shape, strides and
// offset, then a chain of view operations (slice, select, narrow, transpose,
// permute, expand, flip, reshape, squeeze/unsqueeze) with arbitrary
// arguments. Each step must succeed or throw strata::Error; a view that
// exists must lie inside its storage (checked here independently of core,
// and by ASan when its elements are read).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "strata/error.hpp"
#include "strata/storage.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::DType;
using strata::Shape;
using strata::Tensor;

class Bytes {
 public:
  Bytes(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  bool empty() const { return i_ >= n_; }
  std::uint8_t u8() { return i_ < n_ ? d_[i_++] : 0; }
  // Mostly small values (sizes, strides that make sense), sometimes anything:
  // negative, huge, near the int64 limits.
  std::int64_t i64() {
    const std::uint8_t kind = u8();
    if (kind < 160) return static_cast<std::int64_t>(u8() % 9) - (kind < 40 ? 2 : 0);
    if (kind < 230) return static_cast<std::int64_t>(static_cast<std::int8_t>(u8()));
    std::uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v = (v << 8) | u8();
    return static_cast<std::int64_t>(v);
  }

 private:
  const std::uint8_t* d_;
  std::size_t n_, i_ = 0;
};

// Independent bounds check: every element offset of the view in [0, cap).
void check_inside(const Tensor& t) {
  if (t.numel() == 0) return;
  const std::int64_t isz = static_cast<std::int64_t>(strata::itemsize(t.dtype()));
  __int128 lo = t.offset(), hi = t.offset();
  for (int d = 0; d < t.dim(); ++d) {
    const __int128 span = static_cast<__int128>(t.shape()[static_cast<std::size_t>(d)] - 1) *
                          t.strides()[static_cast<std::size_t>(d)];
    (span < 0 ? lo : hi) += span;
  }
  const __int128 cap = static_cast<__int128>(t.storage()->nbytes()) / isz;
  if (lo < 0 || hi >= cap) std::abort();
}

void touch(const Tensor& t) {
  check_inside(t);
  if (t.numel() <= 4096) (void)t.to_vector<double>();
}

Shape shape_of(Bytes& in, int n) {
  Shape s(static_cast<std::size_t>(n));
  for (auto& x : s) x = in.i64();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  static const DType kTypes[] = {DType::f32, DType::f64, DType::boolean};
  const DType dt = kTypes[in.u8() % 3];
  const std::size_t nbytes = static_cast<std::size_t>(in.u8()) * 4;  // 0 .. 1020
  auto storage = strata::Storage::allocate(nbytes, strata::Device::cpu());
  std::memset(storage->data(), 0, nbytes);
  Tensor t;
  try {
    const int nd = in.u8() % 10;  // up to 9: one more than tensors allow
    const Shape shape = shape_of(in, nd), strides = shape_of(in, nd);
    t = Tensor::from_storage(storage, shape, strides, in.i64(), dt);
    touch(t);  // numel() may refuse an empty view whose other dims overflow
  } catch (const strata::Error&) {
    return 0;
  }
  while (!in.empty()) {
    const std::uint8_t op = in.u8() % 12;
    const int d = static_cast<int>(static_cast<std::int8_t>(in.u8()) % 10);
    try {
      Tensor v;
      switch (op) {
        case 0: {
          const int nd = in.u8() % 10;
          const Shape shape = shape_of(in, nd), strides = shape_of(in, nd);
          v = (in.u8() & 1) ? t.as_strided(shape, strides, in.i64()) : t.as_strided(shape, strides);
          break;
        }
        case 1: {
          const std::int64_t a = in.i64(), b = in.i64(), c = in.i64();
          v = t.slice(d, a, b, c);
          break;
        }
        case 2:
          v = t.select(d, in.i64());
          break;
        case 3: {
          const std::int64_t a = in.i64();
          v = t.narrow(d, a, in.i64());
          break;
        }
        case 4:
          v = t.transpose(d, static_cast<int>(static_cast<std::int8_t>(in.u8()) % 10));
          break;
        case 5: {
          std::vector<int> p(static_cast<std::size_t>(in.u8() % 10));
          for (int& x : p) x = static_cast<int>(static_cast<std::int8_t>(in.u8()) % 10);
          v = t.permute(p);
          break;
        }
        case 6:
          v = t.expand(shape_of(in, in.u8() % 10));
          break;
        case 7:
          v = t.flip(d);
          break;
        case 8:
          v = t.reshape(shape_of(in, in.u8() % 10));
          break;
        case 9:
          v = t.unsqueeze(d);
          break;
        case 10:
          v = (in.u8() & 1) ? t.squeeze(d) : t.squeeze();
          break;
        default:
          if (t.numel() > 65536) continue;  // a copy: keep it small
          v = t.contiguous();
          break;
      }
      touch(v);
      t = v;
    } catch (const strata::Error&) {
      // refused with a message: fine; keep going from the current view
    }
  }
  return 0;
}
