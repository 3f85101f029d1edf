#pragma once
// The multi-tensor apply of the fused optimizer updates and sum_of_squares
// (PyTorch's fused AdamW, apex): the launcher cuts every tensor of a call
// into chunks of a fixed number of elements and fills a table (the tensors'
// rows, and for each block the tensor and the chunk it works on) that the
// kernel takes by value. A launch covers up to kBlocks chunks of up to
// kTensors tensors; the launcher starts a new table when either runs out (a
// tensor cut there carries over). The table travels in the launch's
// parameter space (up to 32764 bytes since CUDA 12.1 on sm_70 and later):
// nothing is allocated or copied to the device, so a CUDA graph captures
// the launches, and a GPT-2's parameters fit one or two launches.
//
// Also the 4-element vector accesses of the kernels: a chunk starts at a
// multiple of its size, so a tensor whose address is aligned to 4 elements
// is aligned in every chunk; a tensor that is not (a view at an odd offset)
// takes the scalar loop.
#include <cstddef>
#include <cstdint>

namespace strata::cuda {

// The most bytes of kernel parameters a launch may take (CUDA 12.1+,
// sm_70+), less a little for the kernel's other arguments.
inline constexpr std::size_t kMaxParamBytes = 32764;

template <class Row, int kTensors, int kBlocks>
struct ChunkTable {
  static constexpr int max_tensors = kTensors;
  static constexpr int max_blocks = kBlocks;
  Row tensors[kTensors];
  int chunk[kBlocks];                // block b works on chunk[b] of ...
  std::uint16_t tensor_of[kBlocks];  // ... tensors[tensor_of[b]]
};

// Fills `tab` with the chunks of rows[0, count) (each row has a `numel`)
// and calls launch(blocks) whenever the table is full and once at the end;
// tensors with no elements take no block.
template <class Table, class Row, class Launch>
void for_each_launch(Table& tab, const Row* rows, int count, std::int64_t chunk_elems,
                     Launch&& launch) {
  static_assert(Table::max_tensors <= 65535, "tensor_of is 16 bits");
  int nt = 0, nb = 0;
  for (int i = 0; i < count; ++i) {
    const std::int64_t chunks = (rows[i].numel + chunk_elems - 1) / chunk_elems;
    for (std::int64_t c = 0; c < chunks; ++c) {
      if (c == 0 || nt == 0) tab.tensors[nt++] = rows[i];  // a cut tensor starts the next table
      tab.tensor_of[nb] = static_cast<std::uint16_t>(nt - 1);
      tab.chunk[nb] = static_cast<int>(c);
      ++nb;
      if (nb == Table::max_blocks || (nt == Table::max_tensors && c == chunks - 1)) {
        launch(nb);
        nt = 0;
        nb = 0;
      }
    }
  }
  if (nb > 0) launch(nb);
}

// Four consecutive elements, aligned as one vector access (16 bytes for
// f32, 8 for 16-bit types, two 16-byte accesses for f64).
template <class T>
struct alignas(4 * sizeof(T)) Vec4 {
  T v[4];
};

template <class T>
__device__ __forceinline__ bool vec4_aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % sizeof(Vec4<T>) == 0;
}

}  // namespace strata::cuda
