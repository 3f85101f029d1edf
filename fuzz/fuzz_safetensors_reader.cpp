// libFuzzer target: the safetensors reader (nn/src/safetensors.cpp) on
// arbitrary bytes. Every input must load or throw strata::Error; anything
// else (a crash, a sanitizer report, another exception type) is a finding.
// A file that loads is written back with safetensors_bytes and must load
// again to the same names, dtypes, shapes, bytes and metadata, and writing
// that gives the same bytes again (the writer's layout is canonical).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "strata/error.hpp"
#include "strata/nn/safetensors.hpp"

namespace {

using strata::nn::SafetensorsFile;

std::size_t nbytes(const strata::Tensor& t) {
  return static_cast<std::size_t>(t.numel()) * strata::itemsize(t.dtype());
}

bool same(const SafetensorsFile& a, const SafetensorsFile& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (auto ia = a.tensors.begin(), ib = b.tensors.begin(); ia != a.tensors.end(); ++ia, ++ib) {
    const strata::Tensor &t = ia->second, &u = ib->second;
    if (ia->first != ib->first || t.dtype() != u.dtype() || t.shape() != u.shape()) return false;
    if (nbytes(t) > 0 && std::memcmp(t.data_ptr(), u.data_ptr(), nbytes(t)) != 0) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  SafetensorsFile f;
  try {
    f = strata::nn::parse_safetensors(data, size, "fuzz input");
  } catch (const strata::Error&) {
    return 0;  // refused with a message: fine
  }
  // Loaded: fresh contiguous CPU tensors whose bytes came from the input
  // (ASan checks every element when read), no more bytes than it had.
  std::size_t total = 0;
  for (const auto& [name, t] : f.tensors) {
    if (!t.is_contiguous() || t.device() != strata::Device::cpu()) std::abort();
    total += nbytes(t);
    if (t.numel() <= 4096) (void)t.to_vector<double>();
  }
  if (total > size) std::abort();
  // Anything the reader accepts, the writer writes (no catch: an Error here
  // is a finding) and the reader takes back unchanged.
  const std::string bytes = strata::nn::safetensors_bytes(f.tensors, f.metadata);
  const SafetensorsFile g = strata::nn::parse_safetensors(bytes.data(), bytes.size(), "rewritten");
  if (!same(f, g)) std::abort();
  if (strata::nn::safetensors_bytes(g.tensors, g.metadata) != bytes) std::abort();
  return 0;
}
