#pragma once
// safetensors files, the format Hugging Face checkpoints use: an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype,
// shape and byte range, then the raw little-endian data. docs/guide/models.md.
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

// Reads every tensor (F32, F64, F16, BF16, I32, I64, BOOL) into fresh CPU
// tensors (the file's data need not be aligned). A malformed file (truncated,
// a header over 100 MB, bad JSON, a duplicate name, an unknown or unsupported
// dtype, a shape that is not non-negative integers or overflows, offsets that
// overlap, leave gaps or run past the end, a shape whose size disagrees with
// its byte range, __metadata__ that is not an object of strings) is a
// strata::Error naming the file and the tensor; nothing is returned. These
// are the reference implementation's checks (huggingface/safetensors), so a
// file it reads loads here. A BOOL byte other than 0 reads as true.
SafetensorsFile load_safetensors(const std::string& path);
// The same on bytes in memory; `source` names them in errors.
SafetensorsFile parse_safetensors(const void* bytes, std::size_t size, const std::string& source);

// Writes the tensors (any device, any layout; copied to contiguous CPU
// memory one at a time) laid out as the reference implementation writes
// them: by descending dtype alignment (I64, F64, F32, I32, BF16, F16, BOOL),
// then by name, with the header listing __metadata__ (when not empty) and
// then the tensors in that order, padded with spaces to a multiple of 8
// bytes, so every tensor is aligned in a mapped file. The bytes go to a
// temporary file next to `path`, renamed over it when complete (a failed
// save leaves an existing file as it was; its permissions are kept; a
// symlink is written through). A tensor called "__metadata__", an undefined
// tensor or a name that is not UTF-8 is a strata::Error before anything is
// written.
void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// The bytes save_safetensors writes, in memory (small files, tests, fuzzing).
std::string safetensors_bytes(const TensorDict& tensors,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace strata::nn
