#pragma once
// Width-generic SIMD helpers on GCC/Clang vector extensions. Every function
// here is a template on (T, W), so each instruction-set translation unit
// (kernel_generic.cpp, kernel_avx2.cpp, kernel_avx512.cpp) instantiates its
// own copy under its own `#pragma GCC target`. Those TUs include this header
// inside an anonymous namespace (see kernel_impl.hpp), so an AVX-512 copy can
// never be picked by the linker for the generic one.
//
// No standard headers here: they must be included before the target pragma,
// or their inline functions would be compiled for the wider instruction set.

template <class T, int W>
struct VecOf {
  typedef T type __attribute__((vector_size(sizeof(T) * W)));
  // The same vector at element alignment, for unaligned loads and stores.
  typedef T unaligned __attribute__((vector_size(sizeof(T) * W), aligned(sizeof(T)), may_alias));
};
template <class T>
struct IntOf;
template <>
struct IntOf<float> {
  using type = unsigned int;
  static constexpr int mant_bits = 23;
};
template <>
struct IntOf<double> {
  using type = unsigned long long;
  static constexpr int mant_bits = 52;
};

template <class T, int W>
using vec = typename VecOf<T, W>::type;

template <class To, class From>
inline __attribute__((always_inline)) To bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From));
  To r;
  __builtin_memcpy(&r, &x, sizeof(r));
  return r;
}
template <class T, int W>
using ivec = typename VecOf<typename IntOf<T>::type, W>::type;

template <class T, int W>
inline __attribute__((always_inline)) vec<T, W> vload(const T* p) {
  return *reinterpret_cast<const typename VecOf<T, W>::unaligned*>(p);
}

template <class T, int W>
inline __attribute__((always_inline)) void vstore(T* p, vec<T, W> x) {
  *reinterpret_cast<typename VecOf<T, W>::unaligned*>(p) = x;
}

template <class T, int W>
inline __attribute__((always_inline)) vec<T, W> vset1(T x) {
  // Spelled out so the compiler emits one broadcast (x + zero-vector would
  // cost an add: it is not an identity for -0).
  if constexpr (W == 1) {
    return vec<T, W>{x};
  } else if constexpr (W == 2) {
    return vec<T, W>{x, x};
  } else if constexpr (W == 4) {
    return vec<T, W>{x, x, x, x};
  } else if constexpr (W == 8) {
    return vec<T, W>{x, x, x, x, x, x, x, x};
  } else {
    static_assert(W == 16);
    return vec<T, W>{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
  }
}

template <class T, int W>
inline __attribute__((always_inline)) vec<T, W> vzero() {
  return vec<T, W>{};
}

// a * b + c. GCC contracts this to one FMA instruction where the target has
// FMA (C++ defaults to -ffp-contract=fast); elsewhere it is a mul and an add.
template <class T, int W>
inline __attribute__((always_inline)) vec<T, W> vfma(vec<T, W> a, vec<T, W> b, vec<T, W> c) {
  return a * b + c;
}

// max that ignores nothing in particular: when either side is NaN the result
// is b. Callers rely on NaN reaching exp2 through the score itself, not max.
template <class T, int W>
inline __attribute__((always_inline)) vec<T, W> vmax(vec<T, W> a, vec<T, W> b) {
  return a > b ? a : b;
}

template <class T, int W>
inline __attribute__((always_inline)) T hsum(vec<T, W> x) {
  T s[W];
  __builtin_memcpy(s, &x, sizeof(x));
  // Pairwise, so the compiler can use shuffles and the rounding is balanced.
  for (int w = W / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) s[i] += s[i + w];
  return s[0];
}

template <class T, int W>
inline __attribute__((always_inline)) T hmax(vec<T, W> x) {
  T s[W];
  __builtin_memcpy(s, &x, sizeof(x));
  T m = s[0];
  for (int i = 1; i < W; ++i) m = s[i] > m ? s[i] : m;
  return m;
}

// 2^f on [-1/2, 1/2], coefficients highest degree first (see vexp2).
inline constexpr float kExp2PolyF32[] = {1.535336188319500e-4f,
                                         1.339887440266574e-3f,
                                         9.618437357674640e-3f,
                                         5.550332471162809e-2f,
                                         2.402264791363012e-1f,
                                         6.931472028550421e-1f,
                                         1.0f};
inline constexpr double kExp2PolyF64[] = {1.36914888539041281e-12, 2.56784359934882055e-11,
                                          4.44553827187081162e-10, 7.05491162080112336e-09,
                                          1.01780860092396999e-07, 1.32154867901443095e-06,
                                          1.52527338040598411e-05, 1.54035303933816088e-04,
                                          1.33335581464284433e-03, 9.61812910762847688e-03,
                                          5.55041086648215831e-02, 2.40226506959100722e-01,
                                          6.93147180559945286e-01, 1.0};

// Horner's rule: c[0] * f^(N-1) + ... + c[N-1], one fma a coefficient.
template <class T, int W, int N>
inline __attribute__((always_inline)) vec<T, W> vhorner(vec<T, W> f, const T (&c)[N]) {
  vec<T, W> p = vset1<T, W>(c[0]);
#pragma GCC unroll 16
  for (int i = 1; i < N; ++i) p = vfma<T, W>(p, f, vset1<T, W>(c[i]));
  return p;
}

// 2^x for x <= 0 (and NaN, -inf). Cody-Waite style: x = n + f with n integer
// (round to nearest through the 1.5 * 2^mant magic constant, so no rounding
// instruction is needed) and f in [-1/2, 1/2]; 2^f by a polynomial; 2^n by
// adding n to the exponent field. Results below 2^-125 (f32) / 2^-1020 (f64)
// flush to exactly +0, so -inf gives 0; NaN stays NaN because the final mask
// keeps lanes where !(x < limit), and NaN bits plus the (zero) shifted NaN
// exponent are unchanged.
// f32: degree-6 polynomial (Cephes exp2f coefficients), max relative error
// 1.7 ulp in float arithmetic on [-1/2, 1/2]; f64: degree-13 Taylor series,
// truncation error 4e-18 relative. tests/test_attention_cpu_kernel.cpp checks
// both bounds against std::exp2.
template <class T, int W>
inline __attribute__((always_inline)) vec<T, W> vexp2(vec<T, W> x) {
  using V = vec<T, W>;
  using VI = ivec<T, W>;
  constexpr int mb = IntOf<T>::mant_bits;
  const T magic = static_cast<T>(1.5) * static_cast<T>(1ull << mb);
  const V vmagic = vset1<T, W>(magic);
  const V t = x + vmagic;
  const VI n = bitcast<VI>(t) << mb;
  const V f = x - (t - vmagic);
  V p;
  if constexpr (sizeof(T) == 4)
    p = vhorner<T, W>(f, kExp2PolyF32);
  else
    p = vhorner<T, W>(f, kExp2PolyF64);
  const T limit = sizeof(T) == 4 ? static_cast<T>(-125) : static_cast<T>(-1020);
  const VI keep = ~bitcast<VI>(x < vset1<T, W>(limit));
  return bitcast<V>((bitcast<VI>(p) + n) & keep);
}
