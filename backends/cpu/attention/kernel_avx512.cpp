// AVX-512 (F, DQ, BW, VL: Skylake-X and later Xeons): 512-bit vectors,
// 12 x 32 f32 register tiles (24 accumulators of 32 zmm registers).
#define STRATA_ISA avx512
#define STRATA_ISA_TARGET "avx512f,avx512dq,avx512bw,avx512vl,avx2,fma"
#define STRATA_ISA_F32_W 16
#define STRATA_ISA_MR 12
#include "cpu/attention/kernel_x86.hpp"
