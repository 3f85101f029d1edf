#!/usr/bin/env python3
"""`strata train` against PyTorch (docs/guide/training.md, "Parity with PyTorch").

For each case (a tiny Llama- or GPT-2-style model and an optimizer) it
  1. draws initial weights and writes them as safetensors with a config.json,
  2. runs `strata train --init ... --order sequential` on them,
  3. trains the same model in PyTorch (bench/peer_model.py's definitions, the
     same Hugging Face names) from the same weights on the same batches, built
     from the documented sequential order: row b of micro-batch j of step s is
     sequence i = (s K + j) B + b, the T + 1 tokens from (i T) mod (n - T - 1),
     with torch.optim.AdamW / SGD, Strata's default parameter groups (no decay
     on norms, biases and embeddings), clip_grad_norm_ and the same schedule,
  4. compares every step's loss, lr and grad_norm (train_log.csv), the
     validation losses, and the final weights (checkpoint/model.safetensors).
It exits 1 on any mismatch past the tolerances, and when PyTorch is missing.

  f32:  the losses (and the gradient norms before clipping) within
        --loss-tol relative (1e-4), the final weights within --weight-tol
        (1e-3) of each tensor's largest magnitude.
  bf16: `strata train --dtype bf16` against PyTorch's f32 run; PyTorch's own
        autocast bf16 run (f32 master weights) is measured beside it, and the
        bound is the larger of --bf16-loss-tol (2e-2) and twice autocast's own
        spread from f32 (the same for the weights, with --bf16-weight-tol).

usage: train_parity.py --strata BIN [--backend cpu] [--device cpu] [--dtype f32]
                       [--cases llama-adamw,gpt2-adamw,llama-sgd,gpt2-sgd,llama-nesterov] [--steps 50] [--keep DIR]
On the GPU machine: --backend cuda --device cuda (TF32 is switched off in PyTorch).
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # a missing peer is a failure, never a silent pass
    print(f"train_parity: FAILED: {e} (the peer needs NumPy and PyTorch: Debian's python3-numpy "
          "and python3-torch, which scripts/install-deps.sh installs)", file=sys.stderr)
    sys.exit(1)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import peer_model  # noqa: E402  (Strata's models in plain PyTorch)


def sdpa_math(q, k, v, attn_mask=None):
    """F.scaled_dot_product_attention's maths, for PyTorch < 2.0 (Debian's 1.13)."""
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


if not hasattr(F, "scaled_dot_product_attention"):
    F.scaled_dot_product_attention = sdpa_math

# ---------------------------------------------------------------- safetensors

ST_DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}


def write_safetensors(path, tensors):
    """The file format itself: u64 little-endian header length, JSON header, raw data."""
    header, blobs, at = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [at, at + a.nbytes]}
        blobs.append(a.tobytes())
        at += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))


def read_safetensors(path):
    """name -> f64 array; BF16 widened exactly (its bits are an f32's top half)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        lo, hi = h["data_offsets"]
        buf = raw[8 + n + lo:8 + n + hi]
        if h["dtype"] == "BF16":
            a = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(buf, np.dtype(ST_DTYPES[h["dtype"]]).newbyteorder("<"))
        out[name] = a.reshape(h["shape"]).astype(np.float64)
    return out


# ---------------------------------------------------------------- cases

TINY = dict(
    llama=peer_model.llama_config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  num_key_value_heads=2, intermediate_size=160,
                                  max_position_embeddings=64),
    gpt2=peer_model.gpt2_config(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=96))

# The run's options: T, B, K, the schedule (warm-up then cosine), clipping, decay.
BASE = dict(seq_len=32, batch=4, accum=2, lr=3e-3, warmup=5, min_lr=3e-4, weight_decay=0.1,
            clip=1.0, optimizer="adamw", momentum=0.0, nesterov=False, val_fraction=0.0,
            val_every=0)
CASES = {
    "llama-adamw": dict(style="llama"),
    # GPT-2 on .npy ids with a validation tail: n is then the tokens before it.
    "gpt2-adamw": dict(style="gpt2", val_fraction=0.1, val_every=10),
    "llama-sgd": dict(style="llama", optimizer="sgd", momentum=0.9, lr=0.1, min_lr=0.01),
    "gpt2-sgd": dict(style="gpt2", optimizer="sgd", momentum=0.9, lr=0.1, min_lr=0.01),
    "llama-nesterov": dict(style="llama", optimizer="sgd", momentum=0.9, nesterov=True, lr=0.1,
                           min_lr=0.01),
}
DEFAULT_CASES = "llama-adamw,gpt2-adamw,llama-sgd,gpt2-sgd,llama-nesterov"


def make_data(style, folder):
    """A few thousand tokens (the order wraps within the run): words for the
    byte model's text file, a skewed id stream for GPT-2's .npy."""
    rng = random.Random(7)
    if style == "llama":
        words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "and",
                 "runs", "far", "away", "from", "home", "today"]
        text = " ".join(rng.choice(words) for _ in range(1000)) + "\n"
        path = os.path.join(folder, "data.txt")
        with open(path, "w") as f:
            f.write(text)
        return path, np.frombuffer(text.encode(), np.uint8).astype(np.int64)
    vocab = TINY["gpt2"]["vocab_size"]
    ids = np.array([min(int(rng.expovariate(0.08)), vocab - 1) for _ in range(5000)], np.int64)
    path = os.path.join(folder, "data.npy")
    np.save(path, ids.astype(np.int32))
    return path, ids


def initial_weights(cfg, seed):
    """peer_model's spread initialisation at a moderate scale: norms' weights
    and biases not at 1 and 0, so that their gradients and groups matter."""
    torch.manual_seed(seed)
    m = peer_model.build(cfg)
    peer_model.init_spread(m, seed=seed, embed_std=0.5)
    return {k: v.float().numpy() for k, v in peer_model.state_for_file(m).items()}


def schedule(o, steps, s):
    """The documented schedule: linear warm-up lr (s+1)/W, then a cosine to min_lr at `steps`."""
    if o["warmup"] > 0 and s < o["warmup"]:
        return o["lr"] * (s + 1) / o["warmup"]
    if s >= steps:
        return o["min_lr"]
    p = (s - o["warmup"]) / max(1, steps - o["warmup"])
    return o["min_lr"] + 0.5 * (1 + math.cos(math.pi * p)) * (o["lr"] - o["min_lr"])


def decays(name, p):
    """Strata's default groups (nn::decays_by_default)."""
    return p.dim() >= 2 and not any(e in name for e in ("wte", "wpe", "embed"))


# ---------------------------------------------------------------- PyTorch


def torch_train(cfg, weights, ids, o, steps, device, autocast):
    """The run in PyTorch: per-step loss, lr, grad_norm; val losses; final weights."""
    m = peer_model.build(cfg)
    peer_model.load_file_into(m, {k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    m = m.to(device).float().train()
    named = list(m.named_parameters())  # a tied head appears once
    dec = [p for n, p in named if decays(n, p)]
    rest = [p for n, p in named if not decays(n, p)]
    wd = o["weight_decay"]
    groups = [dict(params=dec, weight_decay=wd), dict(params=rest, weight_decay=0.0)]
    if o["optimizer"] == "adamw":
        opt = torch.optim.AdamW(groups, lr=o["lr"], betas=(0.9, 0.95), eps=1e-8)
    else:
        opt = torch.optim.SGD(groups, lr=o["lr"], momentum=o["momentum"], nesterov=o["nesterov"])
    T, B, K = o["seq_len"], o["batch"], o["accum"]
    n_all = len(ids)
    n_val = math.floor(n_all * o["val_fraction"])
    n = n_all - n_val
    data = torch.from_numpy(ids).to(device)
    cache_dtype = torch.bfloat16 if autocast else torch.float32
    V = cfg["vocab_size"]

    def loss_of(offsets):
        x = torch.stack([data[a:a + T] for a in offsets])
        y = torch.stack([data[a + 1:a + T + 1] for a in offsets])
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=autocast):
            logits = m(x, m.new_cache(len(offsets), T, cache_dtype, device))
        return F.cross_entropy(logits.float().reshape(-1, V), y.reshape(-1))

    log, val = [], {}
    for s in range(steps):
        opt.zero_grad(set_to_none=False)
        losses = []
        for j in range(K):
            rows = [(s * K + j) * B + b for b in range(B)]
            loss = loss_of([(i * T) % (n - T - 1) for i in rows])
            (loss / K).backward()
            losses.append(float(loss))
        params = [p for _, p in named]
        if o["clip"] > 0:
            gn = float(torch.nn.utils.clip_grad_norm_(params, o["clip"]))
        else:
            gn = float(torch.norm(torch.stack([p.grad.norm() for p in params])))
        lr = schedule(o, steps, s)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        log.append((sum(losses) / K, lr, gn))
        step = s + 1
        if n_val > 0 and ((o["val_every"] > 0 and step % o["val_every"] == 0) or step == steps):
            windows = (n_val - 1) // T
            with torch.no_grad():
                means = [float(loss_of([n + w * T for w in range(f, min(f + B, windows))]))
                         for f in range(0, windows, B)][:8]
            val[step] = sum(means) / len(means)
    sd = peer_model.state_for_file(m)
    return log, val, {k: v.double().cpu().numpy() for k, v in sd.items()}


# ---------------------------------------------------------------- Strata


def strata_train(a, folder, data_path, o, steps):
    out = os.path.join(folder, "out")
    cmd = [a.strata, "train", "--init", os.path.join(folder, "model.safetensors"),
           "--data", data_path, "--order", "sequential", "--backend", a.backend,
           "--dtype", a.dtype, "--steps", str(steps), "--schedule", "cosine", "--out", out]
    for key in ("seq_len", "batch", "accum", "lr", "warmup", "min_lr", "weight_decay", "clip",
                "optimizer", "momentum", "val_fraction", "val_every"):
        cmd += ["--" + key.replace("_", "-"), repr(o[key]) if isinstance(o[key], float) else
                str(o[key])]
    if o["nesterov"]:
        cmd.append("--nesterov")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"strata train failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    with open(os.path.join(out, "train_log.csv")) as f:
        rows = [line.rstrip("\n").split(",") for line in f][1:]
    log = [(float(r[1]), float(r[3]), float(r[4])) for r in rows]
    val = {int(r[0]): float(r[2]) for r in rows if r[2]}
    return log, val, read_safetensors(os.path.join(out, "checkpoint", "model.safetensors"))


# ---------------------------------------------------------------- comparison


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def noise_only(name, a):
    """GPT-2's key bias (c_attn.bias[D:2D]) shifts every score of a query by
    one constant, which the softmax removes: its gradient is zero in exact
    arithmetic, so both runs move it by rounding noise that AdamW scales up
    to about lr a step. Those elements are left out of the weight check and
    reported apart. Returns (the rest, the noise-only part)."""
    if not name.endswith("attn.c_attn.bias"):
        return a, a[:0]
    d = a.shape[0] // 3
    return np.concatenate([a[:d], a[2 * d:]]), a[d:2 * d]


def weight_errors(got, want):
    """Per tensor: the largest |difference| over the tensor's largest |value|;
    and the largest |difference| of the noise-only elements."""
    if set(got) != set(want):
        raise RuntimeError(f"tensor names differ: {sorted(set(got) ^ set(want))}")
    err, noise = {}, 0.0
    for k in want:
        (g, gn), (w, wn) = noise_only(k, got[k]), noise_only(k, want[k])
        err[k] = float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-30))
        noise = max([noise] + ([float(np.abs(gn - wn).max())] if wn.size else []))
    return err, noise


def run_case(a, name, folder):
    spec = dict(CASES[name])
    cfg = TINY[spec.pop("style")]
    o = dict(BASE, **spec)
    data_path, ids = make_data(cfg["model_type"], folder)
    weights = initial_weights(cfg, seed=11)
    write_safetensors(os.path.join(folder, "model.safetensors"), weights)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    t0 = time.perf_counter()
    s_log, s_val, s_w = strata_train(a, folder, data_path, o, a.steps)
    t1 = time.perf_counter()
    t_log, t_val, t_w = torch_train(cfg, weights, ids, o, a.steps, a.device, autocast=False)
    t2 = time.perf_counter()
    if len(s_log) != len(t_log):
        raise RuntimeError(f"strata logged {len(s_log)} steps, PyTorch {len(t_log)}")
    loss_err = [rel(s[0], t[0]) for s, t in zip(s_log, t_log)]
    r = dict(case=name, steps=a.steps, dtype=a.dtype, strata_s=t1 - t0, torch_s=t2 - t1,
             loss_first=t_log[0][0], loss_last=t_log[-1][0],
             max_loss_rel=max(loss_err), worst_step=1 + int(np.argmax(loss_err)),
             max_loss_rel_first5=max(loss_err[:5]),
             max_lr_rel=max(rel(s[1], t[1]) for s, t in zip(s_log, t_log)),
             max_grad_norm_rel=max(rel(s[2], t[2]) for s, t in zip(s_log, t_log)),
             val_steps=sorted(s_val), max_val_rel=max([rel(s_val[k], t_val.get(k, math.nan))
                                                       for k in s_val] or [0.0]))
    w_err, noise = weight_errors(s_w, t_w)
    worst = max(w_err, key=w_err.get)
    r.update(max_weight_rel=w_err[worst], worst_weight=worst, key_bias_abs=noise)
    loss_tol, weight_tol = a.loss_tol, a.weight_tol
    if a.dtype == "bf16":  # PyTorch's own autocast spread, measured the same way
        b_log, _, b_w = torch_train(cfg, weights, ids, o, a.steps, a.device, autocast=True)
        r["torch_autocast_loss_rel"] = max(rel(b[0], t[0]) for b, t in zip(b_log, t_log))
        r["torch_autocast_weight_rel"] = max(weight_errors(b_w, t_w)[0].values())
        loss_tol = max(a.bf16_loss_tol, 2 * r["torch_autocast_loss_rel"])
        weight_tol = max(a.bf16_weight_tol, 2 * r["torch_autocast_weight_rel"])
    r.update(loss_tol=loss_tol, weight_tol=weight_tol)
    bad = []
    if not r["max_loss_rel"] <= loss_tol:
        bad.append(f"loss off by {r['max_loss_rel']:.3g} relative at step {r['worst_step']}")
    if a.dtype == "f32" and not r["max_grad_norm_rel"] <= loss_tol:  # bf16: reported
        bad.append(f"grad_norm off by {r['max_grad_norm_rel']:.3g} relative")
    if not r["max_lr_rel"] <= 1e-7:  # the log prints 9 significant digits
        bad.append(f"lr off by {r['max_lr_rel']:.3g} relative")
    if not r["max_val_rel"] <= loss_tol or sorted(s_val) != sorted(t_val):
        bad.append(f"val_loss at steps {sorted(s_val)} vs {sorted(t_val)}, "
                   f"off by {r['max_val_rel']:.3g}")
    if not r["max_weight_rel"] <= weight_tol:
        bad.append(f"final weight {worst} off by {r['max_weight_rel']:.3g} relative")
    r["failures"] = bad
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--strata", required=True, help="the strata binary")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--device", default="cpu", help="PyTorch's device (cpu or cuda)")
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    p.add_argument("--cases", default=DEFAULT_CASES, help="comma-separated, of: " + ", ".join(CASES))
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--loss-tol", type=float, default=1e-4)
    p.add_argument("--weight-tol", type=float, default=1e-3)
    p.add_argument("--bf16-loss-tol", type=float, default=2e-2)
    p.add_argument("--bf16-weight-tol", type=float, default=5e-2)
    p.add_argument("--keep", help="keep each case's files (weights, data, strata's out) here")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    torch.manual_seed(0)
    if a.device == "cuda":  # f32 means f32: no TF32 in PyTorch's GEMMs
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    results, failed = [], False
    for name in a.cases.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(a.keep, name) if a.keep else tmp
            os.makedirs(folder, exist_ok=True)
            try:
                r = run_case(a, name, folder)
            except RuntimeError as e:
                r = dict(case=name, failures=[str(e)])
        results.append(r)
        failed |= bool(r["failures"])
        if "max_loss_rel" in r:
            print(f"{name} ({a.dtype}, {a.backend} vs torch {torch.__version__} {a.device}, "
                  f"{a.steps} steps, loss {r['loss_first']:.4f} -> {r['loss_last']:.4f}): "
                  f"loss rel {r['max_loss_rel']:.2e} (step {r['worst_step']}; first 5 steps "
                  f"{r['max_loss_rel_first5']:.2e}; tol {r['loss_tol']:.0e}), grad_norm rel "
                  f"{r['max_grad_norm_rel']:.2e}, lr rel {r['max_lr_rel']:.1e}, val rel "
                  f"{r['max_val_rel']:.2e} at {r['val_steps']}, weights rel "
                  f"{r['max_weight_rel']:.2e} ({r['worst_weight']}; tol {r['weight_tol']:.0e})"
                  + (f"; key bias (noise only) abs {r['key_bias_abs']:.1e}" if r["key_bias_abs"] else "")
                  + f" [strata {r['strata_s']:.1f} s, torch {r['torch_s']:.1f} s]"
                  + (f"; torch autocast vs f32: loss {r['torch_autocast_loss_rel']:.2e}, "
                     f"weights {r['torch_autocast_weight_rel']:.2e}" if a.dtype == "bf16" else ""))
        for f in r["failures"]:
            print(f"{name}: MISMATCH: {f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    print("train_parity: " + ("FAILED" if failed else "ok"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
