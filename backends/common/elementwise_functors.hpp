#pragma once
// The maths of each elementwise op, once, for the cpu and cuda engines
// (the reference backend keeps its own f64 formulas, so that a wrong
// formula here shows up as a mismatch). C is the compute type: float for
// f32/f16/bf16, double for f64. Host and device code share every line.
#include <cmath>

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__ __forceinline__
#else
#define STRATA_HD inline
#endif

namespace strata::fn {

// Overloads by compute type, spelled with the C names that exist on both
// host and device.
STRATA_HD float m_exp(float x) { return ::expf(x); }
STRATA_HD double m_exp(double x) { return ::exp(x); }
STRATA_HD float m_log(float x) { return ::logf(x); }
STRATA_HD double m_log(double x) { return ::log(x); }
STRATA_HD float m_sqrt(float x) { return ::sqrtf(x); }
STRATA_HD double m_sqrt(double x) { return ::sqrt(x); }
STRATA_HD float m_tanh(float x) { return ::tanhf(x); }
STRATA_HD double m_tanh(double x) { return ::tanh(x); }
STRATA_HD float m_erfc(float x) { return ::erfcf(x); }
STRATA_HD double m_erfc(double x) { return ::erfc(x); }
STRATA_HD float m_rsqrt(float x) {
#if defined(__CUDA_ARCH__)
  return ::rsqrtf(x);  // 2 ulp, as PyTorch's CUDA rsqrt
#else
  return 1.0f / ::sqrtf(x);
#endif
}
STRATA_HD double m_rsqrt(double x) { return 1.0 / ::sqrt(x); }
STRATA_HD float m_abs(float x) { return ::fabsf(x); }
STRATA_HD double m_abs(double x) { return ::fabs(x); }
STRATA_HD float m_pow(float x, float y) { return ::powf(x, y); }
STRATA_HD double m_pow(double x, double y) { return ::pow(x, y); }

// A functor's scalar members filled from IterArgs::scalar: two (clamp's lo
// and hi), one (the `_scalar` ops) or none. Host code (the launchers).
template <class F>
inline F make_functor(const double (&s)[2]) {
  if constexpr (requires { F{0.0, 0.0}; }) {
    return F{s[0], s[1]};
  } else if constexpr (requires { F{0.0}; }) {
    return F{s[0]};
  } else {
    return F{};
  }
}

// ---- binary ------------------------------------------------------------------------
struct Add {
  template <class C>
  STRATA_HD C operator()(C a, C b) const {
    return a + b;
  }
};
struct Sub {
  template <class C>
  STRATA_HD C operator()(C a, C b) const {
    return a - b;
  }
};
struct Mul {
  template <class C>
  STRATA_HD C operator()(C a, C b) const {
    return a * b;
  }
};
// silu(a) * b in one pass: the gated MLP's activation (SwiGLU), one rounding.
struct SiluMul {
  template <class C>
  STRATA_HD C operator()(C a, C b) const {
    return a / (C(1) + m_exp(-a)) * b;
  }
};
struct Div {
  template <class C>
  STRATA_HD C operator()(C a, C b) const {
    return a / b;
  }
};
struct Pow {
  template <class C>
  STRATA_HD C operator()(C a, C b) const {
    return m_pow(a, b);
  }
};
// A NaN in either input is the result (as PyTorch's maximum and minimum).
struct Maximum {
  template <class C>
  STRATA_HD C operator()(C a, C b) const {
    return a != a ? a : (b != b || a < b ? b : a);
  }
};
struct Minimum {
  template <class C>
  STRATA_HD C operator()(C a, C b) const {
    return a != a ? a : (b != b || b < a ? b : a);
  }
};

// ---- with a scalar (IterArgs::scalar[0]) ---------------------------------------------
struct AddScalar {
  double s;
  template <class C>
  STRATA_HD C operator()(C a) const {
    return a + static_cast<C>(s);
  }
};
struct SubScalar {
  double s;
  template <class C>
  STRATA_HD C operator()(C a) const {
    return a - static_cast<C>(s);
  }
};
struct RsubScalar {
  double s;
  template <class C>
  STRATA_HD C operator()(C a) const {
    return static_cast<C>(s) - a;
  }
};
struct MulScalar {
  double s;
  template <class C>
  STRATA_HD C operator()(C a) const {
    return a * static_cast<C>(s);
  }
};
struct DivScalar {
  double s;
  template <class C>
  STRATA_HD C operator()(C a) const {
    return a / static_cast<C>(s);
  }
};
struct RdivScalar {
  double s;
  template <class C>
  STRATA_HD C operator()(C a) const {
    return static_cast<C>(s) / a;
  }
};
struct PowScalar {
  double s;
  template <class C>
  STRATA_HD C operator()(C a) const {
    return m_pow(a, static_cast<C>(s));
  }
};
// min(max(x, lo), hi), as PyTorch: lo > hi gives hi, a NaN x stays NaN. An
// absent bound arrives as NaN, and x < NaN is false: no bound.
struct Clamp {
  double lo, hi;
  template <class C>
  STRATA_HD C operator()(C x) const {
    const C r = x < static_cast<C>(lo) ? static_cast<C>(lo) : x;
    return r > static_cast<C>(hi) ? static_cast<C>(hi) : r;
  }
};

// ---- unary ---------------------------------------------------------------------------
struct Neg {
  template <class C>
  STRATA_HD C operator()(C x) const {
    return -x;
  }
};
struct Exp {
  template <class C>
  STRATA_HD C operator()(C x) const {
    return m_exp(x);
  }
};
struct Log {
  template <class C>
  STRATA_HD C operator()(C x) const {
    return m_log(x);
  }
};
struct Sqrt {
  template <class C>
  STRATA_HD C operator()(C x) const {
    return m_sqrt(x);
  }
};
struct Rsqrt {
  template <class C>
  STRATA_HD C operator()(C x) const {
    return m_rsqrt(x);
  }
};
struct Tanh {
  template <class C>
  STRATA_HD C operator()(C x) const {
    return m_tanh(x);
  }
};
struct Sigmoid {
  template <class C>
  STRATA_HD C operator()(C x) const {
    return C(1) / (C(1) + m_exp(-x));
  }
};
struct Relu {
  // NaN stays NaN (x > 0 is false for NaN, so test the other way round).
  template <class C>
  STRATA_HD C operator()(C x) const {
    return x < C(0) ? C(0) : x;
  }
};
struct Gelu {
  // x/2 (1 + erf(x/sqrt 2)) written with erfc: for negative x, 1 + erf
  // cancels to a few bits while erfc(-x/sqrt 2) keeps full precision.
  template <class C>
  STRATA_HD C operator()(C x) const {
    return C(0.5) * x * m_erfc(x * C(-0.70710678118654752440));
  }
};
struct GeluTanh {
  // x/2 (1 + tanh(u)) = x / (1 + exp(-2u)): the same function without the
  // cancellation of 1 + tanh(u) for negative x.
  template <class C>
  STRATA_HD C operator()(C x) const {
    const C k2 = C(1.59576912160573071176);  // 2 sqrt(2 / pi)
    return x / (C(1) + m_exp(-k2 * (x + C(0.044715) * x * x * x)));
  }
};
struct Silu {
  template <class C>
  STRATA_HD C operator()(C x) const {
    return x / (C(1) + m_exp(-x));
  }
};
struct Abs {
  template <class C>
  STRATA_HD C operator()(C x) const {
    return m_abs(x);
  }
};

// ---- backward of the activations: (grad, x) -> grad * f'(x) ---------------------------
// (sigmoid and tanh take their output y, from which f' is cheaper.)
struct ReluBackward {
  template <class C>
  STRATA_HD C operator()(C g, C x) const {
    return x > C(0) ? g : C(0);
  }
};
struct GeluBackward {
  // d/dx x/2 erfc(-x/sqrt 2) = erfc(-x/sqrt 2)/2 + x exp(-x^2/2)/sqrt(2 pi)
  template <class C>
  STRATA_HD C operator()(C g, C x) const {
    const C cdf = C(0.5) * m_erfc(x * C(-0.70710678118654752440));
    const C pdf = C(0.39894228040143267794) * m_exp(C(-0.5) * x * x);
    return g * (cdf + x * pdf);
  }
};
struct GeluTanhBackward {
  // y = x/2 (1 + t), t = tanh(u), u = k (x + 0.044715 x^3), k = sqrt(2/pi):
  // dy/dx = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 * 0.044715 x^2). With
  // e = exp(-2u) and s = 1 / (1 + e): (1 + t)/2 = s and (1 - t^2)/2 = 2 e s^2,
  // one exp instead of a tanh (several times dearer on the cpu) and no
  // cancellation in 1 + t or 1 - t^2 (e s, not 1 - s). 2u is kept above -80 so that e stays
  // finite (e s^2 is then below 1e-34, as good as 0).
  template <class C>
  STRATA_HD C operator()(C g, C x) const {
    const C k2 = C(1.59576912160573071176);  // 2 sqrt(2 / pi)
    const C u2 = k2 * (x + C(0.044715) * x * x * x);
    const C e = m_exp(-(u2 > C(-80) ? u2 : C(-80)));
    const C s = C(1) / (C(1) + e);
    const C es = e * s;  // 1 - s, at most 1
    const C du = C(0.79788456080286535588) * (C(1) + C(0.134145) * x * x);
    return g * (s + C(2) * x * du * es * s);
  }
};
struct SiluBackward {
  // d/dx x s(x) = s (1 + x (1 - s)), s the sigmoid
  template <class C>
  STRATA_HD C operator()(C g, C x) const {
    const C s = C(1) / (C(1) + m_exp(-x));
    return g * s * (C(1) + x * (C(1) - s));
  }
};
struct SigmoidBackward {
  template <class C>
  STRATA_HD C operator()(C g, C y) const {
    return g * y * (C(1) - y);
  }
};
// g sign(x): 0 at 0 (and at NaN), as PyTorch's abs backward at 0.
struct AbsBackward {
  template <class C>
  STRATA_HD C operator()(C g, C x) const {
    return x > C(0) ? g : (x < C(0) ? -g : C(0));
  }
};
struct TanhBackward {
  template <class C>
  STRATA_HD C operator()(C g, C y) const {
    return g * (C(1) - y * y);
  }
};

// ---- comparisons: -> bool ------------------------------------------------------------
// C is the type compared in: the stored type, f32 for f16/bf16 (exact). With
// a scalar, the engines hand s rounded to x's dtype (floating x) or compare
// in double (integer and bool x), so static_cast<C>(s) is exact. NaN compares
// false, but for ne.
#define STRATA_COMPARISON(Name, OP)             \
  struct Name {                                 \
    template <class C>                          \
    STRATA_HD bool operator()(C a, C b) const { \
      return a OP b;                            \
    }                                           \
  };                                            \
  struct Name##Scalar {                         \
    double s;                                   \
    template <class C>                          \
    STRATA_HD bool operator()(C a) const {      \
      return a OP static_cast<C>(s);            \
    }                                           \
  };
STRATA_COMPARISON(Gt, >)
STRATA_COMPARISON(Ge, >=)
STRATA_COMPARISON(Lt, <)
STRATA_COMPARISON(Le, <=)
STRATA_COMPARISON(Eq, ==)
STRATA_COMPARISON(Ne, !=)
#undef STRATA_COMPARISON

// ---- ternary ------------------------------------------------------------------------
// where(cond, a, b): the engine passes cond as bool and a, b as stored (no
// arithmetic, so any dtype works unconverted).
struct Where {
  template <class T>
  STRATA_HD T operator()(bool c, T a, T b) const {
    return c ? a : b;
  }
};

}  // namespace strata::fn
