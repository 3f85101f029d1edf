// AVX2 + FMA (x86-64 since Haswell / Zen): 256-bit vectors, 6 x 16 f32
// register tiles (12 accumulators of 16 ymm registers).
#define STRATA_ISA avx2
#define STRATA_ISA_TARGET "avx2,fma"
#define STRATA_ISA_F32_W 8
#define STRATA_ISA_MR 6
#include "cpu/attention/kernel_x86.hpp"
