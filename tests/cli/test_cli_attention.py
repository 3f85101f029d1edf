#!/usr/bin/env python3
"""End-to-end test of `strata attention --q/--k/--v --out` on .npy files.

Makes the arrays a new user would make with NumPy (C and Fortran order,
transposed saves, batched, broadcast batch dims, GQA, bool and float masks,
causal both ways, windows, custom scale, f32 and f64, empty key sets), runs the
tool, and compares OUT and LSE with an independent float64 NumPy
implementation of the attention contract (docs/guide/cli-attention.md, docs/guide/attention.md).
Then checks that every error exits non-zero with one line on stderr and leaves
no output file behind.

usage: /usr/bin/python3 test_cli_attention.py /path/to/strata
Exit 77 (CTest: skipped) when NumPy is missing.
"""
import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not importable by %s; install python3-numpy and run this "
          "script with /usr/bin/python3" % sys.executable)
    sys.exit(77)

STRATA = os.path.abspath(sys.argv[1])
TOL = {np.float32: 1e-5, np.float64: 1e-12}  # relative Frobenius, as `strata attention`
failures = []


# ---- the independent reference --------------------------------------------------------
def reference(q, k, v, mask=None, causal="none", window=None, align="bottom-right", scale=None):
    """softmax(scale * q k^T + bias) v in float64, with lse; -inf / 0 for empty rows."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    single = q.ndim == 2
    if single:
        q, k, v = q[None], k[None], v[None]
    hq, m, d = q.shape[-3:]
    hkv, n = k.shape[-3], k.shape[-2]
    k = np.repeat(k, hq // hkv, axis=-3)  # query head h reads kv head h // (hq // hkv)
    v = np.repeat(v, hq // hkv, axis=-3)
    if scale is None:
        scale = 1.0 / np.sqrt(d)
    s = scale * np.matmul(q, np.swapaxes(k, -1, -2))
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    off = 0 if (causal == "top-left" or align == "top-left") else n - m
    keep = np.ones((m, n), dtype=bool)
    if causal != "none":
        keep &= j <= i + off
    if window is not None:
        left, right = window
        if left >= 0:
            keep &= j >= i + off - left
        if right >= 0:
            keep &= j <= i + off + right
    if mask is not None:
        if mask.dtype == np.bool_:
            keep = keep & mask
        else:
            s = s + mask.astype(np.float64)
    keep = np.broadcast_to(keep, s.shape)
    s = np.where(keep, s, -np.inf)
    mx = s.max(axis=-1, keepdims=True, initial=-np.inf)
    p = np.where(keep & np.isfinite(s), np.exp(s - np.where(np.isfinite(mx), mx, 0.0)), 0.0)
    l = p.sum(axis=-1, keepdims=True)
    out = np.where(l > 0, np.matmul(p, v) / np.where(l > 0, l, 1.0), 0.0)
    lse = np.where(l[..., 0] > 0, mx[..., 0] + np.log(np.where(l[..., 0] > 0, l[..., 0], 1.0)),
                   -np.inf)
    if single:
        out, lse = out[0], lse[0]
    return out, lse


# ---- helpers ---------------------------------------------------------------------------
def run(args, exe=None, **kw):
    kw.setdefault("timeout", 600)
    return subprocess.run([exe or STRATA, "attention", *args], capture_output=True, text=True,
                          **kw)


def rel_err(got, want):
    got = np.asarray(got, dtype=np.float64)
    fin = np.isfinite(want)
    if not np.array_equal(fin, np.isfinite(got)) or not np.array_equal(got[~fin], want[~fin]):
        return np.inf
    num = np.linalg.norm(got[fin] - want[fin])
    den = np.linalg.norm(want[fin])
    return num / den if den > 0 else num


def fail(name, why):
    failures.append("%s: %s" % (name, why))
    print("FAIL %s: %s" % (name, why))


def leftovers(d):
    return [f for f in os.listdir(d) if f.startswith(".strata-tmp")]


def check_case(tmp, name, q, k, v, mask=None, causal="none", window=None, align="bottom-right",
               scale=None, backend=None, repeat=None, want_lse=True):
    print("case %s: q %s %s%s, k %s, v %s%s" % (
        name, q.shape, q.dtype, " F" if q.flags.f_contiguous and not q.flags.c_contiguous else "",
        k.shape, v.shape, "" if mask is None else ", mask %s %s" % (mask.shape, mask.dtype)))
    paths = {}
    for key, arr in (("q", q), ("k", k), ("v", v), ("mask", mask)):
        if arr is not None:
            paths[key] = os.path.join(tmp, "%s_%s.npy" % (name, key))
            np.save(paths[key], arr)
    out_path = os.path.join(tmp, name + "_out.npy")
    lse_path = os.path.join(tmp, name + "_lse.npy")
    args = ["--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--out", out_path]
    if want_lse:
        args += ["--lse", lse_path]
    if mask is not None:
        args += ["--mask", paths["mask"]]
    if causal != "none":
        args += ["--causal", causal]
    if window is not None:
        args += ["--window=%d,%d" % window]
    if align != "bottom-right":
        args += ["--window-align", align]
    if scale is not None:
        args += ["--scale", repr(scale)]
    if backend is not None:
        args += ["--backend", backend]
    if repeat is not None:
        args += ["--repeat", str(repeat)]
    r = run(args)
    if r.returncode != 0:
        return fail(name, "exit %d, stderr: %s" % (r.returncode, r.stderr.strip()))
    want_out, ref_lse = reference(q, k, v, mask, causal, window, align, scale)
    out = np.load(out_path)
    if out.dtype != q.dtype:
        return fail(name, "out dtype %s, expected %s" % (out.dtype, q.dtype))
    if not out.flags.c_contiguous:
        return fail(name, "out is not in C order")
    if out.shape != want_out.shape:
        return fail(name, "out shape %s, expected %s" % (out.shape, want_out.shape))
    tol = TOL[q.dtype.type]
    e = rel_err(out, want_out)
    if not e <= tol:
        return fail(name, "out rel err %.3g > %.0e" % (e, tol))
    if want_lse:
        lse = np.load(lse_path)
        if lse.shape != ref_lse.shape:
            return fail(name, "lse shape %s, expected %s" % (lse.shape, ref_lse.shape))
        el = rel_err(lse, ref_lse)
        if not el <= tol:
            return fail(name, "lse rel err %.3g > %.0e (or -inf rows differ)" % (el, tol))
    print("  ok: out rel err %.2e" % e)


def one_error_line(name, r, expect_code=None, expect_text=None, kind="target"):
    """r failed with exactly one 'strata: error:' line (and the given code / text)."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    print("%s case %s: exit %d, stderr: %s" % (kind, name, r.returncode, r.stderr.strip()))
    if r.returncode == 0:
        return fail(name, "exit 0, expected failure")
    if expect_code is not None and r.returncode != expect_code:
        return fail(name, "exit %d, expected %d" % (r.returncode, expect_code))
    if len(lines) != 1 or not lines[0].startswith("strata: error: "):
        return fail(name, "stderr is not one 'strata: error:' line: %r" % r.stderr)
    if expect_text is not None and expect_text not in lines[0]:
        return fail(name, "message lacks %r: %s" % (expect_text, lines[0]))
    return True


def check_error(tmp, name, args, expect_code=None):
    """The command must fail: non-zero exit, one stderr line, no output file."""
    out_path = os.path.join(tmp, "err_%s_out.npy" % name)
    lse_path = os.path.join(tmp, "err_%s_lse.npy" % name)
    full = [a.replace("@OUT", out_path).replace("@LSE", lse_path) for a in args]
    r = run(full)
    if not one_error_line(name, r, expect_code, kind="error"):
        return
    for p in (out_path, lse_path):
        if os.path.exists(p):
            return fail(name, "created %s" % p)
    if leftovers(tmp):
        return fail(name, "left temporary files %s" % leftovers(tmp))


def randn(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


# ---- the cases -------------------------------------------------------------------------
def correctness_cases(tmp):
    rng = np.random.default_rng(20261107)
    f4, f8 = np.float32, np.float64

    # Plain C order, batched, d != dv, M != N.
    check_case(tmp, "c_f32", randn(rng, (2, 4, 33, 16), f4), randn(rng, (2, 4, 47, 16), f4),
               randn(rng, (2, 4, 47, 24), f4))
    # The same in Fortran order (column-major strided tensors inside strata), f64.
    check_case(tmp, "fortran_f64", np.asfortranarray(randn(rng, (2, 3, 31, 7), f8)),
               np.asfortranarray(randn(rng, (2, 3, 65, 7), f8)),
               np.asfortranarray(randn(rng, (2, 3, 65, 5), f8)))
    # What np.save writes for a transposed array: x.T is F-contiguous, so the file is F order.
    check_case(tmp, "transposed_save_f32", randn(rng, (16, 20, 3, 2), f4).T,
               randn(rng, (16, 40, 3, 2), f4).T, randn(rng, (8, 40, 3, 2), f4).T)
    # Mixed layouts across q, k, v.
    check_case(tmp, "mixed_layouts", randn(rng, (3, 17, 9), f4),
               np.asfortranarray(randn(rng, (3, 29, 9), f4)), randn(rng, (3, 29, 9), f4))
    # A single head: q [M, d].
    check_case(tmp, "single_head_2d", randn(rng, (9, 5), f8), randn(rng, (11, 5), f8),
               randn(rng, (11, 3), f8))
    # Batch dims that broadcast: k and v shared across the batch of q.
    check_case(tmp, "broadcast_batch", randn(rng, (3, 2, 5, 8), f4), randn(rng, (1, 2, 7, 8), f4),
               randn(rng, (1, 2, 7, 8), f4))
    check_case(tmp, "broadcast_batch_rank", randn(rng, (2, 3, 2, 6, 4), f8),
               randn(rng, (3, 1, 10, 4), f8), randn(rng, (3, 1, 10, 4), f8))
    # Grouped-query attention: 8 query heads over 2 kv heads.
    check_case(tmp, "gqa", randn(rng, (1, 8, 10, 16), f4), randn(rng, (1, 2, 12, 16), f4),
               randn(rng, (1, 2, 12, 16), f4))
    # Bool mask broadcast over batch and heads, with one fully masked row.
    m, n = 12, 20
    bmask = rng.random((1, 1, m, n)) < 0.7
    bmask[0, 0, 3, :] = False
    check_case(tmp, "bool_mask", randn(rng, (2, 3, m, 8), f4), randn(rng, (2, 3, n, 8), f4),
               randn(rng, (2, 3, n, 8), f4), mask=bmask)
    # Bool mask in Fortran order, per head.
    check_case(tmp, "bool_mask_fortran", randn(rng, (3, m, 8), f8), randn(rng, (3, n, 8), f8),
               randn(rng, (3, n, 8), f8), mask=np.asfortranarray(rng.random((3, m, n)) < 0.5))
    # Float mask [M, N] made in NumPy's default float64, on f32 inputs (converted).
    fmask = rng.standard_normal((m, n))
    fmask[2, 5:] = -np.inf
    check_case(tmp, "float_mask_f64_on_f32", randn(rng, (2, m, 8), f4), randn(rng, (2, n, 8), f4),
               randn(rng, (2, n, 8), f4), mask=fmask)
    check_case(tmp, "float_mask_f32", randn(rng, (2, m, 8), f4), randn(rng, (2, n, 8), f4),
               randn(rng, (2, n, 8), f4), mask=fmask.astype(f4))
    # Causal, both alignments, M < N and M > N (top rows fully masked bottom-right).
    for mm, nn in ((7, 19), (19, 7)):
        for causal in ("bottom-right", "top-left"):
            check_case(tmp, "causal_%s_%dx%d" % (causal, mm, nn), randn(rng, (2, mm, 8), f4),
                       randn(rng, (2, nn, 8), f4), randn(rng, (2, nn, 8), f4), causal=causal)
    # Sliding windows, with causal and alone, both alignments; custom scale.
    check_case(tmp, "window", randn(rng, (2, 30, 8), f8), randn(rng, (2, 40, 8), f8),
               randn(rng, (2, 40, 8), f8), window=(5, 3))
    check_case(tmp, "window_causal", randn(rng, (2, 30, 8), f4), randn(rng, (2, 40, 8), f4),
               randn(rng, (2, 40, 8), f4), window=(4, -1), causal="bottom-right")
    check_case(tmp, "window_top_left_scale", randn(rng, (2, 30, 8), f4),
               randn(rng, (2, 40, 8), f4), randn(rng, (2, 40, 8), f4), window=(-1, 2),
               align="top-left", scale=0.3)
    # Everything at once, on the reference backend and the cpu backend.
    for backend in ("reference", "cpu"):
        check_case(tmp, "all_" + backend, np.asfortranarray(randn(rng, (2, 4, 21, 12), f4)),
                   randn(rng, (1, 2, 33, 12), f4), randn(rng, (1, 2, 33, 6), f4),
                   mask=rng.random((4, 21, 33)) < 0.8, causal="top-left", window=(9, -1),
                   scale=0.25, backend=backend, repeat=2)
    # No keys at all: out = 0, lse = -inf.
    check_case(tmp, "no_keys", randn(rng, (2, 5, 4), f4), randn(rng, (2, 0, 4), f4),
               randn(rng, (2, 0, 3), f4))
    # Odd head dims.
    check_case(tmp, "d1_dv257", randn(rng, (1, 13, 1), f4), randn(rng, (1, 9, 1), f4),
               randn(rng, (1, 9, 257), f4), want_lse=False)


def error_cases(tmp):
    rng = np.random.default_rng(7)
    good = {}
    for key, shape in (("q", (2, 5, 8)), ("k", (2, 6, 8)), ("v", (2, 6, 4)), ("k7", (2, 6, 7)),
                       ("q3h", (3, 5, 8)), ("qb3", (3, 2, 5, 8)),
                       ("kb2", (2, 2, 6, 8)), ("vb2", (2, 2, 6, 4)), ("mask_bad", (5, 7))):
        good[key] = os.path.join(tmp, "e_%s.npy" % key)
        np.save(good[key], rng.standard_normal(shape).astype(np.float32))
    for key, arr in (("i64", np.arange(80).reshape(2, 5, 8)),
                     ("f16", rng.standard_normal((2, 5, 8)).astype(np.float16))):
        good[key] = os.path.join(tmp, "e_%s.npy" % key)
        np.save(good[key], arr)
    garbage = os.path.join(tmp, "e_garbage.npy")
    with open(garbage, "wb") as f:
        f.write(b"this is not a numpy file at all")
    truncated = os.path.join(tmp, "e_truncated.npy")
    with open(good["q"], "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[:-10])
    qkv = ["--q", good["q"], "--k", good["k"], "--v", good["v"]]

    check_error(tmp, "missing_file", ["--q", os.path.join(tmp, "nope.npy"), "--k", good["k"],
                                      "--v", good["v"], "--out", "@OUT"])
    check_error(tmp, "garbage_file", ["--q", garbage, "--k", good["k"], "--v", good["v"],
                                      "--out", "@OUT"])
    check_error(tmp, "truncated_file", ["--q", truncated, "--k", good["k"], "--v", good["v"],
                                        "--out", "@OUT", "--lse", "@LSE"])
    check_error(tmp, "directory_as_input", ["--q", tmp, "--k", good["k"], "--v", good["v"],
                                            "--out", "@OUT"])
    check_error(tmp, "int64_input", ["--q", good["i64"], "--k", good["k"], "--v", good["v"],
                                     "--out", "@OUT"])
    # float16 files are read (half_cases), but q, k and v must agree.
    check_error(tmp, "float16_q_float32_k", ["--q", good["f16"], "--k", good["k"], "--v", good["v"],
                                             "--out", "@OUT"])
    check_error(tmp, "head_dim_mismatch", ["--q", good["q"], "--k", good["k7"], "--v", good["v"],
                                           "--out", "@OUT", "--lse", "@LSE"])
    check_error(tmp, "batch_no_broadcast", ["--q", good["qb3"], "--k", good["kb2"], "--v",
                                            good["vb2"], "--out", "@OUT"])
    check_error(tmp, "gqa_heads", ["--q", good["q3h"], "--k", good["k"], "--v", good["v"],
                                   "--out", "@OUT"])
    check_error(tmp, "mask_shape", qkv + ["--mask", good["mask_bad"], "--out", "@OUT"])
    check_error(tmp, "unknown_backend", qkv + ["--backend", "tpu", "--out", "@OUT"])
    check_error(tmp, "bad_causal", qkv + ["--causal", "sideways", "--out", "@OUT"])
    check_error(tmp, "bad_window", qkv + ["--window", "x,1", "--out", "@OUT"])
    check_error(tmp, "nan_scale", qkv + ["--scale", "nan", "--out", "@OUT"])
    check_error(tmp, "out_is_lse", qkv + ["--out", "@OUT", "--lse", "@OUT"], expect_code=2)
    check_error(tmp, "no_out", qkv, expect_code=2)
    check_error(tmp, "only_q", ["--q", good["q"], "--out", "@OUT"], expect_code=2)
    check_error(tmp, "out_dir_missing", qkv + ["--out", os.path.join(tmp, "no", "such", "o.npy")])

    # An existing output file is left byte for byte as it was when the run fails.
    keep = os.path.join(tmp, "existing_out.npy")
    with open(keep, "wb") as f:
        f.write(b"precious")
    r = run(["--q", good["q"], "--k", good["k7"], "--v", good["v"], "--out", keep])
    with open(keep, "rb") as f:
        if r.returncode == 0 or f.read() != b"precious":
            fail("existing_out_untouched", "a failed run changed %s" % keep)
        else:
            print("error case existing_out_untouched: ok")

    # cuda: either unavailable (one clear line, no file) or, on a GPU machine, correct.
    r = run(qkv + ["--backend", "cuda", "--out", os.path.join(tmp, "probe_cuda.npy")])
    if r.returncode == 0:
        print("cuda is available here: checking its answers")
        rng2 = np.random.default_rng(11)
        check_case(tmp, "cuda_fortran_mask", np.asfortranarray(randn(rng2, (2, 4, 37, 16), np.float32)),
                   randn(rng2, (2, 2, 45, 16), np.float32), randn(rng2, (2, 2, 45, 8), np.float32),
                   mask=rng2.random((37, 45)) < 0.6, causal="bottom-right", backend="cuda")
    else:
        check_error(tmp, "cuda_unavailable", qkv + ["--backend", "cuda", "--out", "@OUT"])

    if leftovers(tmp):
        fail("temporaries", "left %s" % leftovers(tmp))


# ---- output targets behave like np.save's -----------------------------------------------

def as_nobody():
    os.setgid(65534)
    os.setuid(65534)


def output_target_cases(tmp):
    rng = np.random.default_rng(3)
    d = os.path.join(tmp, "targets")
    os.mkdir(d)
    q, k, v = (randn(rng, s, np.float32) for s in ((2, 5, 8), (2, 6, 8), (2, 6, 4)))
    want, _ = reference(q, k, v)
    paths = {}
    for key, arr in (("q", q), ("k", k), ("v", v)):
        paths[key] = os.path.join(d, key + ".npy")
        np.save(paths[key], arr)
    qkv = ["--q", paths["q"], "--k", paths["k"], "--v", paths["v"]]
    with open(paths["q"], "rb") as f:
        q_bytes = f.read()

    def result_ok(name, data_path):
        try:
            got = np.load(data_path)
        except Exception as e:  # noqa: BLE001 - any failure to load is the finding
            return fail(name, "cannot load the result: %s" % e)
        if got.shape != want.shape or not rel_err(got, want) <= 1e-5:
            return fail(name, "wrong result in %s" % data_path)
        return True

    # Same file under two spellings, neither existing yet (relative to the cwd).
    r = run(qkv + ["--out", "./same.npy", "--lse", "same.npy"], cwd=d)
    if one_error_line("same_file_spelling", r, 2, "same file"):
        if os.path.exists(os.path.join(d, "same.npy")):
            fail("same_file_spelling", "created same.npy")
    # --out naming an input, spelled differently and through a symlink.
    os.symlink("q.npy", os.path.join(d, "q_link.npy"))
    for name, out in (("out_is_input", os.path.join(d, ".", "q.npy")),
                      ("out_is_input_symlink", os.path.join(d, "q_link.npy"))):
        r = run(qkv + ["--out", out])
        if one_error_line(name, r, 2, "--q"):
            with open(paths["q"], "rb") as f:
                if f.read() != q_bytes:
                    fail(name, "the input q.npy was changed")
    r = run(qkv + ["--out", os.path.join(d, "o.npy"), "--lse", os.path.join(d, "k.npy")])
    one_error_line("lse_is_input", r, 2, "--k")

    # A symlink is written through: the link stays, its target gets the data.
    target = os.path.join(d, "target.npy")
    with open(target, "wb") as f:
        f.write(b"old")
    link = os.path.join(d, "link.npy")
    os.symlink("target.npy", link)
    r = run(qkv + ["--out", link])
    if r.returncode != 0:
        fail("symlink_through", "exit %d: %s" % (r.returncode, r.stderr.strip()))
    elif not os.path.islink(link) or os.readlink(link) != "target.npy":
        fail("symlink_through", "the symlink was replaced")
    elif result_ok("symlink_through", target):
        print("target case symlink_through: ok")

    # A FIFO is written in place (np.save does the same); a reader thread drains it.
    fifo = os.path.join(d, "pipe.npy")
    os.mkfifo(fifo)
    got = []
    # A daemon: if a broken writer replaces the FIFO, the reader waits forever
    # on the old one and must not keep the test from exiting.
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    r = run(qkv + ["--out", fifo], timeout=120)
    reader.join(timeout=10)
    if r.returncode != 0:
        fail("fifo", "exit %d: %s" % (r.returncode, r.stderr.strip()))
    elif not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        fail("fifo", "the FIFO was replaced")
    elif not got or result_ok("fifo", io.BytesIO(got[0])):
        print("target case fifo: ok")

    # A regular file keeps its permission bits.
    keep = os.path.join(d, "mode.npy")
    with open(keep, "wb") as f:
        f.write(b"old")
    os.chmod(keep, 0o640)
    r = run(qkv + ["--out", keep])
    mode = stat.S_IMODE(os.stat(keep).st_mode)
    if r.returncode != 0 or mode != 0o640:
        fail("mode_kept", "exit %d, mode %o (want 640)" % (r.returncode, mode))
    elif result_ok("mode_kept", keep):
        print("target case mode_kept: ok")

    # Targets the user may not write: as root, run the tool as nobody.
    ro_dir = os.path.join(d, "ro")
    os.mkdir(ro_dir)
    os.chmod(d, 0o755)
    os.chmod(tmp, 0o755)
    ro = os.path.join(ro_dir, "ro.npy")
    with open(ro, "wb") as f:
        f.write(b"precious")
    os.chmod(ro, 0o444)
    extra = {}
    if os.geteuid() == 0:
        # nobody may not reach the build tree (a checkout under a 0700
        # folder): run a copy of the tool from this test's own 0755 folder,
        # with a working directory nobody can enter.
        exe = os.path.join(tmp, "strata_as_nobody")
        shutil.copy2(STRATA, exe)
        os.chmod(exe, 0o755)
        extra = {"preexec_fn": as_nobody, "exe": exe, "cwd": tmp}
    if os.geteuid() == 0:
        os.chmod(ro_dir, 0o777)  # the directory is writable to nobody, the file is not
    r = run(qkv + ["--out", ro], **extra)
    if one_error_line("readonly_file", r, 1, "not writable"):
        with open(ro, "rb") as f:
            if f.read() != b"precious" or stat.S_IMODE(os.stat(ro).st_mode) != 0o444:
                fail("readonly_file", "the read-only file was changed")
    os.chmod(ro_dir, 0o755 if os.geteuid() == 0 else 0o555)
    r = run(qkv + ["--out", os.path.join(ro_dir, "new.npy")], **extra)
    if one_error_line("readonly_dir", r, 1, "not writable"):
        if os.path.exists(os.path.join(ro_dir, "new.npy")):
            fail("readonly_dir", "created a file in a read-only directory")
    os.chmod(ro_dir, 0o755)

    # Character devices (our own nodes, so a broken writer replaces nothing of
    # the machine's): written in place; /dev/full's ENOSPC is a clear error.
    if os.geteuid() != 0:
        print("target case char_device: skipped (mknod needs root)")
    else:
        null_node, full_node = os.path.join(d, "null"), os.path.join(d, "full")
        os.mknod(null_node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(full_node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        r = run(qkv + ["--out", null_node])
        if r.returncode != 0 or not stat.S_ISCHR(os.lstat(null_node).st_mode):
            fail("dev_null", "exit %d, is a char device: %s" % (
                r.returncode, stat.S_ISCHR(os.lstat(null_node).st_mode)))
        else:
            print("target case dev_null: ok")
        lse = os.path.join(d, "full_lse.npy")
        r = run(qkv + ["--out", full_node, "--lse", lse])
        if one_error_line("dev_full", r, 1, "No space left on device"):
            if not stat.S_ISCHR(os.lstat(full_node).st_mode):
                fail("dev_full", "the device node was replaced")
            if os.path.exists(lse):
                fail("dev_full", "the other output was written although the run failed")
    if leftovers(d):
        fail("target_temporaries", "left %s" % leftovers(d))


# ---- messages a new user meets ------------------------------------------------------------
def message_cases(tmp):
    rng = np.random.default_rng(5)
    d = os.path.join(tmp, "messages")
    os.mkdir(d)
    paths = {}
    for key, shape in (("q", (2, 5, 8)), ("k", (2, 6, 8)), ("v", (2, 6, 4))):
        paths[key] = os.path.join(d, key + ".npy")
        np.save(paths[key], rng.standard_normal(shape).astype(np.float32))
    obj = os.path.join(d, "objects.npy")
    np.save(obj, np.array([1, "a"], dtype=object), allow_pickle=True)
    boolq = os.path.join(d, "boolq.npy")
    np.save(boolq, rng.random((2, 5, 8)) < 0.5)
    out = ["--out", os.path.join(d, "o.npy")]
    r = run(["--q", obj, "--k", paths["k"], "--v", paths["v"]] + out)
    if one_error_line("object_dtype", r, 1, "objects.npy': dtype '|O' (Python objects) is not "
                      "supported"):
        if "malformed" in r.stderr:
            fail("object_dtype", "reported as a malformed header")
    r = run(["--q", boolq, "--k", paths["k"], "--v", paths["v"]] + out)
    one_error_line("bool_q", r, 1, "--q '%s': dtype bool" % boolq)
    for name, args, text in (("scale_abc", ["--scale", "abc"], "--scale 'abc': expected a number"),
                             ("m_abc", ["--m", "abc"], "--m 'abc': expected an integer"),
                             ("repeat_0", ["--repeat", "0"], "--repeat 0: must be between 1")):
        r = run(["--q", paths["q"], "--k", paths["k"], "--v", paths["v"]] + out + args
                if name == "scale_abc" else args)
        if one_error_line(name, r, 2, text) and "Could not convert" in r.stderr:
            fail(name, "CLI11's raw message")
    for sub in ([], ["attention"], ["check"]):
        h = subprocess.run([STRATA, *sub, "--help"], capture_output=True, text=True, timeout=60)
        if h.returncode != 0 or "Exit status: 0 success" not in h.stdout or \
                "3 a backend disagreed" not in h.stdout:
            fail("help_exit_codes", "strata %s --help does not list the exit codes" % " ".join(sub))


# ---- the built-in problem: sizes checked before work ------------------------------------
def demo_cases():
    import time
    # Sizes that cannot fit: a clear one-line error, at once.
    t0 = time.time()
    r = run(["--heads", "2000000000"])
    if one_error_line("demo_heads_2e9", r, 1, "of memory are available"):
        if time.time() - t0 > 5:
            fail("demo_heads_2e9", "took %.1f s to fail" % (time.time() - t0))
    r = run(["--batch", "4611686018427387904", "--heads", "4", "--m", "1", "--n", "1", "--d", "1"])
    one_error_line("demo_int64_overflow", r, 1, "more than 2^63 elements")
    # The reference alone on a problem whose score matrix cannot fit: a
    # strata::Error naming the bytes, not std::bad_alloc (exit 134).
    r = run(["--m", "200000", "--n", "200000", "--heads", "1", "--d", "1", "--backend",
             "reference"])
    one_error_line("demo_reference_too_large", r, 1, "200000 x 200000 score matrix")
    # The cpu backend on a problem the reference cannot hold (1M x 1M scores,
    # 8 TB; a width-1 window keeps the cpu's work small): timed, comparison
    # skipped with the reason, exit 0.
    r = run(["--m", "1000000", "--n", "1000000", "--heads", "1", "--d", "1", "--window", "0,0",
             "--repeat", "1"])
    print("demo case too_large_for_reference: exit %d" % r.returncode)
    if r.returncode != 0:
        fail("demo_too_large_for_reference", "exit %d: %s" % (r.returncode, r.stderr.strip()))
    elif "comparison with the reference skipped" not in r.stdout or \
            "not checked" not in r.stdout or "8000080000000 bytes" not in r.stdout:
        fail("demo_too_large_for_reference", "unexpected output:\n" + r.stdout)


# ---- float16 files, and --dtype converting on load ----------------------------------------
def bf16_round(x):
    """float32 -> the nearest bfloat16 (ties to even), back as float32."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32)


def half_cases(tmp):
    rng = np.random.default_rng(7)
    q, k, v = (randn(rng, s, np.float32) for s in ((2, 3, 17, 32), (2, 3, 40, 32), (2, 3, 40, 32)))
    paths = {}
    for name, arr in (("q", q), ("k", k), ("v", v)):
        paths[name] = os.path.join(tmp, "h_%s.npy" % name)
        np.save(paths[name], arr.astype(np.float16))
        paths[name + "32"] = os.path.join(tmp, "h_%s32.npy" % name)
        np.save(paths[name + "32"], arr)
    out, lse = os.path.join(tmp, "h_out.npy"), os.path.join(tmp, "h_lse.npy")
    # float16 files in, float16 out (lse float32), as the contract says for f16.
    r = run(["--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--out", out, "--lse", lse])
    if r.returncode != 0:
        return fail("f16 files", "exit %d: %s" % (r.returncode, r.stderr.strip()))
    want, want_lse = reference(*(np.load(paths[n]) for n in ("q", "k", "v")))
    got = np.load(out)
    if got.dtype != np.float16 or np.load(lse).dtype != np.float32:
        return fail("f16 files", "dtypes out %s lse %s" % (got.dtype, np.load(lse).dtype))
    e = rel_err(got, want)
    if not e <= 2e-3:
        return fail("f16 files", "out rel err %.3g > 2e-3" % e)
    print("case f16 files: ok, out rel err %.2e" % e)
    # float32 files converted to bf16 on load; written as float32 (NumPy has no bfloat16).
    r = run(["--q", paths["q32"], "--k", paths["k32"], "--v", paths["v32"], "--out", out,
             "--dtype", "bf16"])
    if r.returncode != 0:
        return fail("--dtype bf16", "exit %d: %s" % (r.returncode, r.stderr.strip()))
    want, _ = reference(bf16_round(q), bf16_round(k), bf16_round(v))
    got = np.load(out)
    e = rel_err(got, want)
    if got.dtype != np.float32 or not e <= 1e-2:
        return fail("--dtype bf16", "out %s, rel err %.3g (want float32, <= 1e-2)" % (got.dtype, e))
    # The summary names the dtype of the file, and the backend auto chose.
    wrote = [l for l in r.stdout.splitlines() if "wrote" in l]
    if not wrote or not wrote[0].endswith("[2, 3, 17, 32] f32") or "auto -> " not in r.stdout:
        return fail("--dtype bf16", "summary should say f32 was written, by auto -> a backend:\n" +
                    r.stdout)
    print("case --dtype bf16: ok, out rel err %.2e" % e)
    # The built-in problem runs f32 or f64 only.
    r = run(["--dtype", "bf16", "--m", "4", "--n", "4"])
    if r.returncode != 2 or "built-in problem runs f32 or f64" not in r.stderr:
        fail("--dtype bf16 built-in", "exit %d: %s" % (r.returncode, r.stderr.strip()))


def main():
    if not os.access(STRATA, os.X_OK):
        print("no strata binary at %s" % STRATA)
        return 1
    with tempfile.TemporaryDirectory(prefix="strata_cli_") as tmp:
        correctness_cases(tmp)
        half_cases(tmp)
        error_cases(tmp)
        output_target_cases(tmp)
        message_cases(tmp)
    demo_cases()
    if failures:
        print("\n%d FAILURES:\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    print("\nall CLI cases passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
