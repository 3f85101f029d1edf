#pragma once
// The tuning switchboard: every STRATA_* environment switch that the library
// reads, read from the environment once, on first use, checked, and then only
// read. Nothing else in the library calls getenv. The defaults are the
// shipped choices; a switch exists for A/B runs, tuning and tests that force
// a path (docs/guide/tuning.md lists each one with its values).
//
// The struct is plain data: core neither knows nor acts on what a switch
// means. Each layer reads the fields it owns (nn: models; cpu and cuda: their
// kernels) and derives its own choice from them.
#include <cstdint>
#include <string>
#include <vector>

namespace strata {

// A switch that is on, off, or left to the library's own rule.
enum class Toggle : std::int8_t { automatic = -1, off = 0, on = 1 };

struct Tuning {
  // ---- nn (models) ----------------------------------------------------------
  Toggle fused_residual =
      Toggle::automatic;  // STRATA_FUSED_RESIDUAL: residual add fused into the GEMM
  Toggle cuda_graphs = Toggle::automatic;  // STRATA_CUDA_GRAPHS: decode steps replayed as a graph

  // ---- core -----------------------------------------------------------------
  bool host_cache = true;  // STRATA_HOST_CACHE: freed large host blocks kept for reuse
  // ---- cpu backend ----------------------------------------------------------
  std::string cpu_isa;               // STRATA_CPU_ISA: "" (best), generic, avx2, avx512
  bool cpu_fixed_team = true;        // STRATA_CPU_FIXED_TEAM: full team for short regions
  std::int64_t cpu_slice_elems = 0;  // STRATA_CPU_SLICE_ELEMS: skinny GEMM slice (0: default)

  // ---- cuda backend ---------------------------------------------------------
  std::string cuda_launch;                  // STRATA_CUDA_LAUNCH: "" (pdl), pdl, ex, plain, graph
  bool cuda_block_cache = true;             // STRATA_CUDA_BLOCK_CACHE
  std::string cuda_variant;                 // STRATA_CUDA_VARIANT: streaming attention variant
  std::int64_t cuda_decode_min_tiles = 0;   // STRATA_CUDA_DECODE_MIN_TILES (0: default)
  std::vector<std::string> flash_variants;  // STRATA_FLASH_VARIANT: comma-separated names
  Toggle flash_pad = Toggle::automatic;     // STRATA_FLASH_PAD: the 16-bit pad pass
  std::int64_t flash_splits = 0;            // STRATA_FLASH_SPLITS: forced key splits (0: chosen)
  std::int64_t flash_lpt_heads = -1;        // STRATA_FLASH_LPT: heads per causal group (-1: chosen)
  bool flash_diag_half = true;              // STRATA_FLASH_DIAG_HALF
  std::string rows_variant;          // STRATA_ROWS_VARIANT: "" (tuned) or a row kernel family
  std::string ew_variant;            // STRATA_EW_VARIANT: "" (tiled16), tiled16, base
  bool cuda_gemv = true;             // STRATA_CUDA_GEMV: the small-M GEMV kernels
  std::int64_t gemv_max_m = 0;       // STRATA_GEMV_MAX_M (0: default)
  std::int64_t gemv_rows_max_m = 0;  // STRATA_GEMV_ROWS_MAX_M (0: default)
  std::int64_t gemv_rows_ct = 0;     // STRATA_GEMV_ROWS_CT: 1, 2, 4, 8 (0: chosen)
  Toggle gemv_rows_split = Toggle::automatic;  // STRATA_GEMV_ROWS_SPLIT
  bool gemv16_mma = true;                      // STRATA_GEMV16_MMA

  // Parses the switches from `lookup` (getenv in the library; a map in
  // tests). Throws strata::Error naming the variable and its value when one
  // is malformed.
  static Tuning from(const char* (*lookup)(const char* name));
};

// The process's switchboard: read from the environment on the first call
// (thread-safe), the same object afterwards.
const Tuning& tuning();

// One line per switch: name, current value, what it does (strata info --tuning).
struct TuningSwitch {
  const char* name;
  std::string value;
  const char* help;
};
std::vector<TuningSwitch> tuning_switches(const Tuning& t);

}  // namespace strata
