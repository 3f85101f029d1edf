#pragma once
// Interface between the cpu backend's driver (attention_cpu.cpp: threads,
// task split, merging) and its per-instruction-set block kernels
// (kernel_{generic,avx2,avx512}.cpp, one instantiation of kernel_impl.hpp
// each). A block kernel runs the online softmax of one query block against
// one key range and leaves the unnormalised state in its workspace.
#include <cstddef>
#include <cstdint>

#include "strata/dtype.hpp"

namespace strata::cpu {

using i64 = std::int64_t;

// One task, already resolved to the head's base pointers.
struct BlockJob {
  const void* q;  // row 0 of this query head
  i64 q_ms, q_ds;
  const void* k;  // key 0 of the kv head
  i64 k_ns, k_ds;
  const void* v;
  i64 v_ns, v_ds;
  const void* mask;  // [M, N] view of this head's mask, or null
  bool mask_bool;
  i64 mk_ms, mk_ns;
  i64 d, dv;
  i64 i0, rows;  // query rows [i0, i0 + rows)
  i64 j0, j1;    // keys [j0, j1), already trimmed to the band
  bool has_band;
  i64 band_lo, band_hi;
  double qscale;  // scale * log2(e): scores are kept in base-2 units
  i64 kv_bytes;   // bytes of K and V of one kv head (all N keys)
};

// Unnormalised result of a block, valid until the workspace is reused:
// row r has running max m[r] (base-2 units, -inf when nothing was kept),
// sum l[r] of 2^(score - m) and unnormalised output acc(r, c).
template <class T>
struct BlockState {
  const T* m;
  const T* l;
  const T* acc;
  i64 acc_rs, acc_cs;  // within a panel of panel_rows rows
  i64 panel_rows, panel_stride;
  const T& at(i64 r, i64 c) const {
    return acc[(r / panel_rows) * panel_stride + (r % panel_rows) * acc_rs + c * acc_cs];
  }
};

struct IsaKernels {
  const char* name;  // "avx512", "avx2", "generic"
  i64 mb;            // query rows per task on the blocked path
  i64 nb;            // keys per block on the blocked path
  i64 decode_rows;   // tasks with at most this many rows use the decode path
  std::size_t (*ws_bytes)(DType dt, i64 d, i64 dv);
  // Keys per block the blocked path uses for this head size (split-key chunks
  // are cut on multiples of it, so every chunk but the last runs full blocks).
  i64 (*block_keys)(DType dt, i64 d, i64 dv);
  BlockState<float> (*block_f32)(const BlockJob&, void* ws);
  BlockState<double> (*block_f64)(const BlockJob&, void* ws);
  // y[i] = 2^x[i] with the kernels' fast exp2 (x <= 0); exposed for tests.
  void (*exp2_f32)(const float* x, float* y, i64 n);
  void (*exp2_f64)(const double* x, double* y, i64 n);
};

const IsaKernels& kernels_generic();
const IsaKernels* kernels_avx2();    // null when not compiled for this target
const IsaKernels* kernels_avx512();  // null when not compiled for this target

// The best instruction set this CPU runs, capped by STRATA_CPU_ISA
// ("generic", "avx2", "avx512"; strata/tuning.hpp) or by cap_isa_for_test.
const IsaKernels& select_kernels();
// The best instruction set this CPU runs, whatever the cap.
const IsaKernels& widest_kernels();
// Tests: caps select_kernels() at `isa` ("generic", "avx2", "avx512"), or
// lifts the test cap when null (STRATA_CPU_ISA applies again).
void cap_isa_for_test(const char* isa);

}  // namespace strata::cpu
