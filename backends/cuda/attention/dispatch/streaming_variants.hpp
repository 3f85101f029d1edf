#pragma once
// The compiled kernel variants the launcher chooses from. Each .cu file of
// variants instantiates the kernels of one dtype (they compile in parallel).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/attention/common/streaming_params.cuh"
#include "strata/dtype.hpp"

namespace strata::cuda {

// Launches a variant's kernel: its argument, the decode kernel's ticket
// counters (null: the splits are merged by a separate kernel; the
// streaming kernels ignore it), grid, dynamic shared memory, stream.
using LaunchFn = void (*)(const AttnParams&, unsigned* merge_count, int grid, std::size_t smem,
                          cudaStream_t);

struct Variant {
  const char* name;
  DType dtype;
  bool decode;
  // Chosen automatically; false for the candidates kept for tuning
  // (backends/cuda/lab/attention), which run only when STRATA_CUDA_VARIANT
  // names them.
  bool is_default;
  std::int64_t max_d, max_dv;  // head dims it serves; 0 = any
  int bm, bn, dv_tile;         // query rows, keys per step, output columns per block
  int threads;
  std::size_t smem;
  const void* kernel;
  LaunchFn launch;
  std::int64_t max_work = 0;  // serves only calls with at most this many scores; 0 = any
  // Reads K and V fast only with 16-byte loads along the head dim (the
  // pipelined kernel): the launcher repacks other K/V layouts first.
  bool packs_kv = false;
  // Decode variants: the plan fills sms x min(resident blocks, this) slots
  // with (row, split) blocks; and whether the kernel's own merge of a row's
  // splits is fast at any split count (else the separate merge kernel
  // takes rows of more than kFusedMergeMaxSplits, dispatch/launch_streaming.cu).
  int decode_blocks_per_sm = 4;
  bool merges_any_splits = false;
};

// The variant entry of configuration C's kernel (launched by `launch`):
// the fields every kernel family sets the same way (threads C::NT, shared
// memory C::smem_bytes). ffma/variant_make.cuh and decode/variant_make.cuh
// build the families' entries with it.
template <class C>
Variant variant_of(const char* name, DType dtype, bool decode, std::int64_t max_d,
                   std::int64_t max_dv, int bm, int bn, int dv_tile, const void* kernel,
                   LaunchFn launch) {
  return Variant{.name = name,
                 .dtype = dtype,
                 .decode = decode,
                 .is_default = true,
                 .max_d = max_d,
                 .max_dv = max_dv,
                 .bm = bm,
                 .bn = bn,
                 .dv_tile = dv_tile,
                 .threads = C::NT,
                 .smem = C::smem_bytes,
                 .kernel = kernel,
                 .launch = launch};
}

// A candidate kept for tuning: in the tables only in a tuning build
// (backends/cuda/lab/attention) and chosen only by STRATA_CUDA_VARIANT.
inline Variant candidate(Variant v) {
  v.is_default = false;
  return v;
}

// Restricts a variant to calls of at most `work` scores (batch x heads x M x
// N); among defaults of the same head-dim reach, such a variant is preferred
// where it serves.
inline Variant for_small(Variant v, std::int64_t work) {
  v.max_work = work;
  return v;
}

// The tables the launcher chooses from (every entry a default): it takes
// decode when it serves, else the variant with the smallest head-dim bounds
// that serves the call, a small-problem variant first
// (dispatch/launch_streaming.cu). A tuning build appends the lab's
// candidates (backends/cuda/lab/attention/candidates.hpp).
// f32 and f64: the decode kernel (M <= 8) and the streaming kernels.
const std::vector<Variant>& variants_f32();            // ffma/variants_f32.cu
const std::vector<Variant>& variants_f32_pipelined();  // ffma/variants_f32_pipelined.cu
const std::vector<Variant>& variants_f64();            // ffma/variants_f64.cu
// bf16 and f16 storage, f32 arithmetic: the decode kernel only (M <= 8;
// decode/variants_16bit.cu); longer query blocks are the tensor-core
// kernels'.
const std::vector<Variant>& variants_16bit();

}  // namespace strata::cuda
