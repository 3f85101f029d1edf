// Guarded output buffers (shared by the op runner and the attention
// harness): a sentinel around and between the view's elements, a poison
// pattern at each of them, both written and compared bit for bit with the
// dtype's own item size.
#include <cstring>
#include <limits>

#include "strata/op_harness.hpp"

namespace strata::harness {
namespace {

constexpr double kSentinel = -31337.25;  // exact in f32 and f64; f16/bf16 round it
// Poison: quiet NaNs with unusual payloads for the floating dtypes; for
// bool a byte that is neither false (0) nor true (1); for the integer
// dtypes a value no test output holds.
constexpr std::uint32_t kPoisonF32 = 0x7FE1B2C3u;
constexpr std::uint64_t kPoisonF64 = 0x7FFC1B2C3D4E5F60ull;
constexpr std::uint16_t kPoisonF16 = 0x7E5Bu;   // exponent all ones, quiet bit, payload 0x25B
constexpr std::uint16_t kPoisonBF16 = 0x7FD3u;  // exponent all ones, quiet bit, payload 0x53
constexpr unsigned char kPoisonBool = 0xA5;
constexpr unsigned char kSentinelBool = 0x3C;  // neither 0 nor 1: any bool write changes it
constexpr std::int32_t kPoisonI32 = 0x7FB1C2D3;
constexpr std::int64_t kPoisonI64 = 0x7FFC1B2C3D4E5F60ll;

// The poison of each dtype, in DType's order; each constant is itemsize(dt) bytes.
const void* const kPoison[kNumDTypes] = {&kPoisonF32,  &kPoisonF64, &kPoisonF16, &kPoisonBF16,
                                         &kPoisonBool, &kPoisonI32, &kPoisonI64};

void write_poison(void* p, DType dt) {
  std::memcpy(p, kPoison[static_cast<int>(dt)], itemsize(dt));
}

void write_sentinel(void* p, DType dt) {
  if (dt == DType::boolean) {
    std::memcpy(p, &kSentinelBool, 1);
  } else {
    store_from_double(p, dt, kSentinel);
  }
}

}  // namespace

bool is_poison(const void* p, DType dt) {
  unsigned char want[8];
  write_poison(want, dt);
  return std::memcmp(p, want, itemsize(dt)) == 0;
}

bool is_guard_sentinel(const void* p, DType dt) {
  unsigned char want[8];
  write_sentinel(want, dt);
  return std::memcmp(p, want, itemsize(dt)) == 0;
}

double dtype_eps(DType dt) {
  switch (dt) {
    case DType::f32:
      return 0x1p-23;
    case DType::f64:
      return 0x1p-52;
    case DType::f16:
      return 0x1p-10;
    case DType::bf16:
      return 0x1p-7;
    default:
      return 0;
  }
}

GuardedOutput make_guarded_output(ViewSpec spec, DType dt, std::int64_t guard) {
  spec.offset += guard;
  spec.buffer_numel += 2 * guard;
  GuardedOutput g{spec, Tensor::empty({spec.buffer_numel}, dt, Device::cpu())};
  char* base = static_cast<char*>(g.host.data_ptr());
  const std::size_t isz = itemsize(dt);
  for (std::int64_t i = 0; i < spec.buffer_numel; ++i) write_sentinel(base + i * isz, dt);
  for (std::int64_t p : view_positions(spec)) write_poison(base + p * isz, dt);
  return g;
}

Tensor GuardedOutput::make_view(Device dev, Tensor* buffer_out) const {
  Tensor buf = host.to(dev).clone();  // never share the host original
  if (buffer_out) *buffer_out = buf;
  return buf.as_strided(spec.shape, spec.strides, spec.offset);
}

GuardedRead read_guarded_output(const Tensor& buffer, const ViewSpec& spec, DType dt) {
  const Tensor host = buffer.to(Device::cpu());
  const char* base = static_cast<const char*>(host.data_ptr());
  const std::size_t isz = itemsize(dt);
  const std::vector<std::int64_t> pos = view_positions(spec);
  std::vector<char> covered(static_cast<std::size_t>(spec.buffer_numel), 0);
  GuardedRead r;
  r.values.reserve(pos.size());
  for (std::size_t e = 0; e < pos.size(); ++e) {
    const std::int64_t p = pos[e];
    covered[p] = 1;
    if (is_poison(base + p * isz, dt)) {
      if (r.fully_written) r.first_unwritten = static_cast<std::int64_t>(e);
      r.fully_written = false;
      ++r.unwritten;
      r.values.push_back(std::numeric_limits<double>::quiet_NaN());
    } else if (dt == DType::boolean) {
      unsigned char b;
      std::memcpy(&b, base + p * isz, 1);
      r.values.push_back(b == 0 ? 0.0 : b == 1 ? 1.0 : 2.0);  // 2: not a valid bool
    } else {
      r.values.push_back(load_as_double(base + p * isz, dt));
    }
  }
  for (std::int64_t i = 0; i < spec.buffer_numel; ++i) {
    if (!covered[i] && !is_guard_sentinel(base + i * isz, dt)) {
      if (r.guard_intact) r.first_guard_hit = i;
      r.guard_intact = false;
      ++r.guard_hits;
    }
  }
  return r;
}

}  // namespace strata::harness
