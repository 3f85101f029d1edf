#pragma once
// safetensors files, the format Hugging Face checkpoints use: an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype,
// shape and byte range, then the raw little-endian data. docs/models.md.
#include <cstddef>
#include <map>
#include <string>

#include "strata/tensor.hpp"

namespace strata::nn {

using TensorDict = std::map<std::string, Tensor>;

struct SafetensorsFile {
  TensorDict tensors;                           // CPU, contiguous, stored dtype
  std::map<std::string, std::string> metadata;  // the header's "__metadata__"
};

// Reads every tensor (F32, F64, F16, BF16, I32, I64, BOOL). A malformed file
// (truncated, bad JSON, unknown dtype, offsets that overlap, leave gaps or run
// past the end, a shape whose size disagrees with its byte range) is a
// strata::Error naming the file and the tensor; nothing is returned.
SafetensorsFile load_safetensors(const std::string& path);
// The same on bytes in memory; `source` names them in errors.
SafetensorsFile parse_safetensors(const void* bytes, std::size_t size, const std::string& source);

// Writes the tensors (any device, any layout) in name order.
void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace strata::nn
