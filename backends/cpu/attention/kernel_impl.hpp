// Block kernels of the cpu backend, templated on element type, SIMD width
// and register blocking. Included by kernel_generic.cpp and kernel_x86.hpp
// (the body of kernel_{avx2,avx512}.cpp) AFTER their standard includes and
// `#pragma GCC target`, inside an anonymous namespace, so each instruction
// set gets private copies. No include guard on purpose; no standard headers
// in here (see simd.hpp).
//
// The kernels are split by concern, each a class template of static members
// on the same parameters: ImplCommon (kernel_common.hpp: constants,
// workspace, masks, band, prefetch), ImplBlocked (kernel_blocked.hpp: the
// blocked path) and ImplDecode (kernel_decode.hpp: the decode path). Those
// three headers are included here, in this order, and nowhere else. This
// file adds Impl, which picks the path per job, and the per-instruction-set
// table (Cfg, IsaOf, STRATA_CPU_ISA_TABLE).
#include "cpu/attention/kernel_common.hpp"
//
#include "cpu/attention/kernel_blocked.hpp"
//
#include "cpu/attention/kernel_decode.hpp"

template <class T, int W, int MR, int NV, int MB, int NB, int RD, int NBD>
struct Impl : ImplBlocked<T, W, MR, NV, MB, NB, RD, NBD>,
              ImplDecode<T, W, MR, NV, MB, NB, RD, NBD> {
  using Blocked = ImplBlocked<T, W, MR, NV, MB, NB, RD, NBD>;
  using Decode = ImplDecode<T, W, MR, NV, MB, NB, RD, NBD>;
  using Common = ImplCommon<T, W, MR, NV, MB, NB, RD, NBD>;
  using Blocked::run_blocked;

  // Reached through both bases: named here so the table's lookups are unambiguous.
  using Common::block_keys;
  using Common::ws_elems;

  static BlockState<T> run(const BlockJob& J, void* wsv) {
    T* ws = static_cast<T*>(wsv);
    if (J.rows <= RD) {
      switch (J.rows) {
        case 1:
          return Decode::template run_decode<1>(J, ws);
        case 2:
          if constexpr (RD >= 2) return Decode::template run_decode<2>(J, ws);
          break;
        case 3:
          if constexpr (RD >= 3) return Decode::template run_decode<3>(J, ws);
          break;
        case 4:
          if constexpr (RD >= 4) return Decode::template run_decode<4>(J, ws);
          break;
        default:
          break;
      }
    }
    return run_blocked(J, ws);
  }

  static void exp2_many(const T* x, T* y, i64 n) {
    i64 i = 0;
    for (; i + W <= n; i += W) vstore<T, W>(y + i, vexp2<T, W>(vload<T, W>(x + i)));
    for (; i < n; ++i) y[i] = vexp2<T, W>(vset1<T, W>(x[i]))[0];
  }
};

template <class T, int W, int MR, int NV, int MB, int NB, int RD, int NBD>
struct Cfg {
  using I = Impl<T, W, MR, NV, MB, NB, RD, NBD>;
  static constexpr i64 MB_ = MB, NB_ = NB, RD_ = RD;
};

// Workspace size of one instruction set's pair of configurations (f32, f64).
template <class F, class D>
struct IsaOf {
  static_assert(F::MB_ == D::MB_ && F::NB_ == D::NB_ && F::RD_ == D::RD_);
  static std::size_t ws_bytes(DType dt, i64 d, i64 dv) {
    return dt == DType::f64 ? D::I::ws_elems(d, dv) * sizeof(double)
                            : F::I::ws_elems(d, dv) * sizeof(float);
  }
  static i64 block_keys(DType dt, i64 d, i64 dv) {
    return dt == DType::f64 ? D::I::block_keys(d, dv) : F::I::block_keys(d, dv);
  }
};

// The table is built by the including TU outside its target pragma (only
// addresses are taken there, nothing wider than the baseline runs).
#define STRATA_CPU_ISA_TABLE(NAME, F, D)                                                        \
  IsaKernels {                                                                                  \
    NAME, F::MB_, F::NB_, F::RD_, &IsaOf<F, D>::ws_bytes, &IsaOf<F, D>::block_keys, &F::I::run, \
        &D::I::run, &F::I::exp2_many, &D::I::exp2_many                                          \
  }
