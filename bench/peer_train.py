#!/usr/bin/env python3
"""PyTorch's training step beside Strata's bench_train_{cpu,cuda} (issue 28).

The step bench/bench_train.hpp times, in PyTorch: forward, mean cross entropy
of the next-token logits, backward, clip_grad_norm_(1.0), AdamW (lr 6e-4,
betas 0.9 / 0.95, eps 1e-8, weight decay 0.1 on matrices except embedding
tables, as Strata's default groups), on random tokens already on the device.
The models are bench/peer_model.py's (Hugging Face names, same parameter
counts as Strata's), with a training forward written here: no cache, causal
scaled_dot_product_attention (flash or cuDNN on the GPU in bf16), or where
torch predates it (Debian's 1.13) the same attention as matmul, mask,
softmax, matmul.

  modes    eager; torch.compile (mode default) of the model and loss, unless
           --no-compile (and never on torch 1.x); --max-autotune adds
           mode="max-autotune"
  dtypes   f32 (TF32 off: torch.backends.cuda.matmul.allow_tf32 and cudnn's
           both False, as Strata's f32 matmuls are full precision) and bf16
           (autocast to bf16 over f32 parameters: PyTorch's usual mixed
           precision; Strata's bf16 keeps bf16 parameters and f32 masters)
  AdamW    fused=True on cuda; on cpu torch's default implementation
  timing   each step until the device is done; median over --reps steps
           after --warmup (compiling happens in the warm-up); peak memory
           is torch.cuda.max_memory_allocated over the timed steps

flops per token as bench_train.hpp: 6 N + 12 L H Q T (N: parameters but
learned positions); MFU against --peak-tflops, by default on cuda the H200's
dense 989 (bf16) and 67 (f32, non-tensor) TFLOP/s; none on cpu.

  python3 bench/peer_train.py --device cuda --strata train_cuda.json [--out table.md]
  /usr/bin/python3 bench/peer_train.py --device cpu --threads 2 --strata train_cpu.json
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_model import build, gpt2_config, llama_config  # noqa: E402

# ---------------------------------------------------------------- cases

# name -> (config, T, batches on cuda, batch on cpu); as bench_train_{cpu,cuda}.
CASES = {
    "gpt2_124m": (gpt2_config(vocab_size=50304, n_embd=768, n_layer=12, n_head=12, n_positions=1024),
                  1024, [16, 8], 1),
    "llama17m": (llama_config(), 512, [32], 4),
    "small/llama": (llama_config(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                 num_key_value_heads=2, intermediate_size=704), 256, [8], 8),
    "small/gpt2": (gpt2_config(n_embd=256, n_layer=4, n_head=4), 256, [8], 8),
}
# (case, dtype, batch) rows of a cuda run: what bench_train_cuda registers.
CUDA_ROWS = [("gpt2_124m", "bf16", 16), ("gpt2_124m", "bf16", 8), ("gpt2_124m", "f32", 8),
             ("llama17m", "bf16", 32), ("llama17m", "f32", 32)]

# ---------------------------------------------------------------- training forward


def attention(q, k, v):
    """q [B, H, T, hd], k/v [B, Hkv, T, hd]; causal."""
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[2]
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class TrainLM(nn.Module):
    """Model plus loss: forward(ids, targets) -> mean cross entropy."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.m = build(c)
        self.llama = c["model_type"] == "llama"

    def llama_hidden(self, ids):
        m, c = self.m, self.c
        B, T = ids.shape
        hd = c["hidden_size"] // c["num_attention_heads"]
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, device=ids.device).float() / hd))
        f = torch.arange(T, device=ids.device).float()[:, None] * inv[None, :]
        emb = torch.cat((f, f), dim=-1)
        x = m.model.embed_tokens(ids)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for L in m.model.layers:
            h = L.input_layernorm(x)
            a = L.self_attn
            q = a.q_proj(h).view(B, T, L.H, L.hd).transpose(1, 2)
            k = a.k_proj(h).view(B, T, L.Hkv, L.hd).transpose(1, 2)
            v = a.v_proj(h).view(B, T, L.Hkv, L.hd).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            o = attention(q, k, v)
            x = x + a.o_proj(o.transpose(1, 2).reshape(B, T, L.H * L.hd))
            h = L.post_attention_layernorm(x)
            x = x + L.mlp.down_proj(F.silu(L.mlp.gate_proj(h)) * L.mlp.up_proj(h))
        return m.lm_head(m.model.norm(x))

    def gpt2_hidden(self, ids):
        t = self.m.transformer
        B, T = ids.shape
        x = t.wte(ids) + t.wpe.weight[:T]
        for blk in t.h:
            D = x.shape[-1]
            qkv = blk.attn.c_attn(blk.ln_1(x))
            q, k, v = (u.view(B, T, blk.H, blk.hd).transpose(1, 2) for u in qkv.split(D, dim=2))
            x = x + blk.attn.c_proj(attention(q, k, v).transpose(1, 2).reshape(B, T, D))
            x = x + blk.mlp.c_proj(F.gelu(blk.mlp.c_fc(blk.ln_2(x)), approximate="tanh"))
        return F.linear(t.ln_f(x), t.wte.weight)

    def forward(self, ids, targets):
        logits = self.llama_hidden(ids) if self.llama else self.gpt2_hidden(ids)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def param_groups(model, wd):
    decay, rest = [], []
    for name, p in model.named_parameters():
        emb = any(s in name for s in ("wte", "wpe", "embed"))
        (decay if p.dim() >= 2 and not emb else rest).append(p)
    return [dict(params=decay, weight_decay=wd), dict(params=rest, weight_decay=0.0)]


def flops_per_token(c, nparams, T):
    gpt2 = c["model_type"] == "gpt2"
    L = c["n_layer"] if gpt2 else c["num_hidden_layers"]
    D = c["n_embd"] if gpt2 else c["hidden_size"]
    H = c["n_head"] if gpt2 else c["num_attention_heads"]
    n = nparams - (c["n_positions"] * D if gpt2 else 0)
    return 6 * n + 12 * L * H * (D // H) * T


# ---------------------------------------------------------------- timing


def run_case(name, dtype, B, mode, a):
    dev = a.device
    c, T, _, _ = CASES[name]
    torch.manual_seed(0)
    model = TrainLM(c).to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    kw = dict(lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
    if dev == "cuda":
        kw["fused"] = True
    opt = torch.optim.AdamW(param_groups(model, 0.1), **kw)
    V = c["vocab_size"]
    ids = torch.randint(0, V, (B, T), device=dev)
    tgt = torch.randint(0, V, (B, T), device=dev)
    fn = model
    if mode != "eager":
        fn = torch.compile(model, **({} if mode == "compile" else dict(mode="max-autotune")))
    amp = torch.autocast(device_type=dev, dtype=torch.bfloat16, enabled=dtype == "bf16")
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    params = list(model.parameters())

    def step():
        opt.zero_grad(set_to_none=True)
        with amp:
            loss = fn(ids, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    t0 = time.perf_counter()
    for _ in range(a.warmup):
        step()
    sync()
    warm = time.perf_counter() - t0
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    ts = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        step()
        sync()
        ts.append(time.perf_counter() - t0)
    sec = statistics.median(ts)
    tok_s = B * T / sec
    peak = a.peak_tflops or (dict(bf16=989.0, f32=67.0)[dtype] if dev == "cuda" else 0.0)
    tflops = flops_per_token(c, nparams, T) * tok_s / 1e12
    res = dict(case=name, dtype=dtype, batch=B, seq=T, mode=mode, params=nparams, tok_s=tok_s,
               ms=sec * 1e3, tflops=tflops, mfu=tflops / peak if peak else None, warmup_s=warm,
               peak_mem_GiB=torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else None)
    del fn, model, opt
    if dev == "cuda":
        torch.cuda.empty_cache()
    if mode != "eager":
        torch._dynamo.reset()
    return res


def read_strata(path):
    """bench_train JSON -> {key: entry}; the median of repetitions where there
    are some, else the last run. Keys are the run's name less 'train/', the
    time suffix and Google Benchmark's 'key:value' parts (min_time:1.000)."""
    out = {}
    try:
        runs = json.load(open(path))["benchmarks"]
    except (OSError, ValueError, KeyError) as e:  # a run cut by its timeout leaves it partial
        print(f"peer_train: Strata's results '{path}' unreadable ({e}); PyTorch's rows alone",
              file=sys.stderr)
        return out
    for bm in runs:
        parts = [p for p in bm.get("run_name", bm["name"]).split("/")
                 if ":" not in p and p not in ("manual_time", "real_time")]
        nm = "/".join(parts[1:] if parts and parts[0] == "train" else parts)
        if bm.get("run_type") == "aggregate":
            if bm.get("aggregate_name") == "median":
                out[nm] = dict(bm, _median=True)
        elif not out.get(nm, {}).get("_median"):
            out[nm] = bm
    return out


def fmt(v, f="{:.0f}"):
    return "-" if v is None else f.format(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--threads", type=int, default=2, help="cpu threads")
    ap.add_argument("--cases", nargs="+", help="cpu: which CASES (default the small ones); "
                    "cuda: limit CUDA_ROWS to these case names")
    ap.add_argument("--dtypes", nargs="+", default=None, help="default: f32 bf16 on cuda, f32 on cpu")
    ap.add_argument("--reps", type=int, default=None, help="timed steps (default 20 cuda, 5 cpu)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--compile-dtypes", nargs="+", default=["bf16"],
                    help="cuda: dtypes that get the compiled rows (each compile costs a minute)")
    ap.add_argument("--max-autotune", action="store_true")
    ap.add_argument("--peak-tflops", type=float, default=0.0)
    ap.add_argument("--strata", help="bench_train_cuda / bench_train_cpu JSON output")
    ap.add_argument("--json", help="write PyTorch's rows here")
    ap.add_argument("--out", help="also write the table here")
    a = ap.parse_args()
    a.reps = a.reps or (20 if a.device == "cuda" else 5)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        where = torch.cuda.get_device_name()
    else:
        torch.set_num_threads(a.threads)
        where = f"cpu, {torch.get_num_threads()} threads"
    can_compile = hasattr(torch, "compile") and not a.no_compile
    modes = ["eager"] + (["compile"] if can_compile else []) + \
        (["max-autotune"] if can_compile and a.max_autotune else [])
    if a.device == "cuda":
        dts = a.dtypes or ["f32", "bf16"]
        rows = [r for r in CUDA_ROWS if r[1] in dts and (not a.cases or r[0] in a.cases)]
    else:
        dts = a.dtypes or ["f32"]
        rows = [(n, d, CASES[n][3]) for n in (a.cases or ["small/llama", "small/gpt2"]) for d in dts]
    print(f"torch {torch.__version__} on {where}; modes {modes}; reps {a.reps} after {a.warmup}",
          flush=True)
    strata = read_strata(a.strata) if a.strata else {}
    res = []
    for name, dt, B in rows:
        for mode in modes:
            if mode != "eager" and a.device == "cuda" and dt not in a.compile_dtypes:
                continue
            r = run_case(name, dt, B, mode, a)
            res.append(r)
            print(json.dumps(r), flush=True)
    hdr = ("| case | B x T | strata tok/s | MFU | GiB | " +
           " | ".join(f"{m} tok/s | MFU | GiB" for m in modes) + " | " +
           " | ".join(f"strata / {m}" for m in modes) + " |")
    table = [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    for name, dt, B in rows:
        T = CASES[name][1]
        key = f"{name}/{dt}/B{B}" if a.device == "cuda" else f"{name}/{a.threads}"
        s = strata.get(key, {})
        st = s.get("items_per_second")
        cells = [f"{name} {dt}", f"{B} x {T}", fmt(st), fmt(s.get("mfu"), "{:.1%}"),
                 fmt(s.get("peak_mem_GiB"), "{:.2f}")]
        ratios = []
        for m in modes:
            r = next((r for r in res if (r["case"], r["dtype"], r["batch"], r["mode"]) == (name, dt, B, m)),
                     None)
            cells += [fmt(r and r["tok_s"]), fmt(r and r["mfu"], "{:.1%}"),
                      fmt(r and r["peak_mem_GiB"], "{:.2f}")]
            ratios.append(fmt(st / r["tok_s"] if st and r else None, "{:.2f}"))
        table.append("| " + " | ".join(cells + ratios) + " |")
    text = "\n".join(table)
    print(text)
    if a.out:
        open(a.out, "w").write(text + "\n")
    if a.json:
        json.dump(dict(torch=torch.__version__, where=where, rows=res), open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
