#pragma once
// Copies a strided [rows x cols] matrix into dense row-major storage. The cpu
// driver uses it to turn a K whose head dim is not unit-stride (column-major,
// transposed views, gapped) into row-major K once per call, when several
// query blocks read it (attention_cpu.cpp). Not core's host copy
// (tensor_copy.cpp): that walks the destination's last dim, which for a
// column-major source reads one element per cache line.
#include <cstdint>

namespace strata::cpu {

// dst[r * cols + c] = src[r * rs + c * cs]. Walks along whichever of rs, cs
// is smaller in magnitude, in tiles of kTile rows when that is the row
// stride, so reads run along memory and the tile's writes stay in L1.
template <class T>
void pack_rows(const T* src, std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs,
               T* dst) {
  constexpr std::int64_t kTile = 64;
  const auto mag = [](std::int64_t x) { return x < 0 ? -x : x; };
  if (mag(cs) <= mag(rs)) {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) dst[r * cols + c] = src[r * rs + c * cs];
    return;
  }
  for (std::int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const std::int64_t r1 = r0 + kTile < rows ? r0 + kTile : rows;
    for (std::int64_t c = 0; c < cols; ++c)
      for (std::int64_t r = r0; r < r1; ++r) dst[r * cols + c] = src[r * rs + c * cs];
  }
}

}  // namespace strata::cpu
