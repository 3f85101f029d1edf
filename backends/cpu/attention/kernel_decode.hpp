// Part of the cpu backend's block kernels (see kernel_impl.hpp, which
// includes this after kernel_common.hpp). Same rules as kernel_impl.hpp:
// included inside an anonymous namespace after the target pragma, no include
// guard, no standard headers.
//
// Decode path (rows <= RD, e.g. M = 1): a dot-product formulation over d,
// K and V rows read in place when their last stride is 1, else packed per
// key block.

template <class T, int W, int MR, int NV, int MB, int NB, int RD, int NBD>
struct ImplDecode : ImplCommon<T, W, MR, NV, MB, NB, RD, NBD> {
  using Common = ImplCommon<T, W, MR, NV, MB, NB, RD, NBD>;
  using Common::apply_band;
  using Common::apply_mask;
  using Common::block_fully_kept;
  using Common::kInf;
  using Common::round_up;
  using typename Common::V;

  // ---- decode path ------------------------------------------------------------
  // s[r * NBD + jj] = q_r . K_jj for NK keys whose rows start kstride apart.
  template <int R, int NK>
  static void dot_tile(const T* qp, i64 dp, const T* kr0, i64 kstride, T* s) {
    V acc[R][NK];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int jj = 0; jj < NK; ++jj) acc[r][jj] = vzero<T, W>();
    // This path streams K once from memory: ask for the rows two tiles ahead
    // (before the loop, which needs every register; prefetches never fault).
    for (int jj = 0; jj < NK; ++jj)
      for (i64 c = 0; c < dp; c += 64 / static_cast<i64>(sizeof(T)))
        __builtin_prefetch(kr0 + (2 * NK + jj) * kstride + c);
    for (i64 kk = 0; kk < dp; kk += W) {
      V kv[NK];
#pragma GCC unroll 8
      for (int jj = 0; jj < NK; ++jj) kv[jj] = vload<T, W>(kr0 + jj * kstride + kk);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const V qv = vload<T, W>(qp + r * dp + kk);
#pragma GCC unroll 8
        for (int jj = 0; jj < NK; ++jj) acc[r][jj] = vfma<T, W>(qv, kv[jj], acc[r][jj]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int jj = 0; jj < NK; ++jj) s[r * NBD + jj] = hsum<T, W>(acc[r][jj]);
  }

  // o[r][c..] = o[r][c..] * alpha[r] + sum_j p[r][j] V_j[c..], CV vectors wide.
  template <int R, int CV>
  static void pv_dec(const T* p, i64 nb, const T* vb, i64 vstride, T* o, i64 dvp, const T* al) {
    V acc[R][CV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const V a = vset1<T, W>(al[r]);
#pragma GCC unroll 16
      for (int cv = 0; cv < CV; ++cv) acc[r][cv] = vload<T, W>(o + r * dvp + cv * W) * a;
    }
    for (i64 j = 0; j < nb; ++j) {
      const T* vr = vb + j * vstride;
      V b[CV];
#pragma GCC unroll 16
      for (int cv = 0; cv < CV; ++cv) b[cv] = vload<T, W>(vr + cv * W);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const V x = vset1<T, W>(p[r * NBD + j]);
#pragma GCC unroll 16
        for (int cv = 0; cv < CV; ++cv) acc[r][cv] = vfma<T, W>(x, b[cv], acc[r][cv]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int cv = 0; cv < CV; ++cv) vstore<T, W>(o + r * dvp + cv * W, acc[r][cv]);
  }

  // A block of nb rows at src (row stride ns, n elements of stride ds) as
  // the kernels above read it, (first row, row stride): in place when
  // `direct`, else packed into buf [nb x np], zero-padded to np.
  struct Rows {
    const T* first;
    i64 stride;
  };
  static Rows block_rows(const T* src, i64 ns, i64 ds, i64 nb, i64 n, i64 np, bool direct, T* buf) {
    if (direct) return {src, ns};
    for (i64 j = 0; j < nb; ++j) {
      const T* row = src + j * ns;
      for (i64 c = 0; c < n; ++c) buf[j * np + c] = row[c * ds];
      for (i64 c = n; c < np; ++c) buf[j * np + c] = 0;
    }
    return {buf, np};
  }

  template <int R>
  static BlockState<T> run_decode(const BlockJob& J, T* ws) {
    constexpr int NK = R == 1 ? 8 : (R == 2 ? 4 : 2);
    constexpr int CV = R == 1 ? 8 : (R == 4 ? 2 : 4);
    const i64 d = J.d, dv = J.dv;
    const i64 dp = round_up(d, W), dvp = round_up(dv, W);
    T* qp = ws;
    T* s = qp + R * dp;
    T* o = s + R * NBD;
    T* kpk = o + R * dvp;
    T* vpk = kpk + NBD * dp;
    T* m = vpk + NBD * dvp;
    T* l = m + RD;
    T* al = l + RD;

    const T* q = static_cast<const T*>(J.q);
    const T qs = static_cast<T>(J.qscale);
    for (int r = 0; r < R; ++r) {
      const T* qr = q + (J.i0 + r) * J.q_ms;
      for (i64 kk = 0; kk < d; ++kk) qp[r * dp + kk] = qr[kk * J.q_ds] * qs;
      for (i64 kk = d; kk < dp; ++kk) qp[r * dp + kk] = 0;
      m[r] = -kInf;
      l[r] = 0;
      for (i64 c = 0; c < dvp; ++c) o[r * dvp + c] = 0;
    }

    const T* k = static_cast<const T*>(J.k);
    const T* v = static_cast<const T*>(J.v);
    const bool direct_k = J.k_ds == 1 && d == dp;
    const bool direct_v = J.v_ds == 1 && dv == dvp;
    for (i64 jb = J.j0; jb < J.j1; jb += NBD) {
      const i64 nb = J.j1 - jb < NBD ? J.j1 - jb : NBD;
      const auto [kb, ks] = block_rows(k + jb * J.k_ns, J.k_ns, J.k_ds, nb, d, dp, direct_k, kpk);
      // While K streams through the dot products, ask for the same keys' V
      // rows, so the memory system stays busy through the P V pass too (this
      // path is bound by reading K and V once).
      const T* vnext = v + jb * J.v_ns;
      auto prefetch_v = [&](i64 j0, i64 n) {
        if (J.v_ds == 1)
          for (i64 jj = j0; jj < j0 + n; ++jj)
            for (i64 c = 0; c < dv; c += 64 / static_cast<i64>(sizeof(T)))
              __builtin_prefetch(vnext + jj * J.v_ns + c, 0, 2);
      };
      i64 j = 0;
      for (; j + NK <= nb; j += NK) {
        dot_tile<R, NK>(qp, dp, kb + j * ks, ks, s + j);
        prefetch_v(j, NK);
      }
      for (; j < nb; ++j) {
        dot_tile<R, 1>(qp, dp, kb + j * ks, ks, s + j);
        prefetch_v(j, 1);
      }

      auto at = [s](i64 i, i64 jj) -> T& { return s[i * NBD + jj]; };
      if (J.mask) apply_mask(J, jb, nb, at);
      if (!block_fully_kept(J, jb, nb)) apply_band(J, jb, nb, at);

      const i64 nbp = round_up(nb, W);
      for (int r = 0; r < R; ++r) {
        T* sr = s + r * NBD;
        for (i64 jj = nb; jj < nbp; ++jj) sr[jj] = -kInf;
        V mx = vset1<T, W>(-kInf);
        for (i64 jj = 0; jj < nbp; jj += W) mx = vmax<T, W>(mx, vload<T, W>(sr + jj));
        const T mblk = hmax<T, W>(mx);
        const T mnew = m[r] > mblk ? m[r] : mblk;
        const T mu = mnew == -kInf ? T(0) : mnew;
        const V mv = vset1<T, W>(mu);
        V ls = vzero<T, W>();
        for (i64 jj = 0; jj < nbp; jj += W) {
          const V e = vexp2<T, W>(vload<T, W>(sr + jj) - mv);
          vstore<T, W>(sr + jj, e);
          ls += e;
        }
        // NaN in the row: keep it visible in m, l and the output.
        const T a = vexp2<T, W>(vset1<T, W>(m[r] - mu))[0];
        al[r] = a;
        m[r] = mnew;
        l[r] = l[r] * a + hsum<T, W>(ls);
      }

      const auto [vb, vs] = block_rows(v + jb * J.v_ns, J.v_ns, J.v_ds, nb, dv, dvp, direct_v, vpk);
      i64 c = 0;
      for (; c + CV * W <= dvp; c += CV * W) pv_dec<R, CV>(s, nb, vb + c, vs, o + c, dvp, al);
      for (; c < dvp; c += W) pv_dec<R, 1>(s, nb, vb + c, vs, o + c, dvp, al);
    }
    return BlockState<T>{m, l, o, dvp, 1, RD + 1, 0};
  }
};
