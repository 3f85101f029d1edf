#!/usr/bin/env python3
"""The PyTorch peer of Strata's models (docs/guide/models.md): Llama- and GPT-2-style
decoders written in plain PyTorch with Hugging Face's tensor names, so the
same safetensors file loads in both.

  fixtures OUT      random-initialised fixtures of each style (and, with
                    --tiny DIR, the shipped tiny model) for the parity tests:
                    OUT/<name>/{config.json, model.safetensors,
                    expected.safetensors: prompt, logits, greedy, margin}
  check             the plain models against transformers' own classes
                    (same weights, same logits), where transformers exists
  bench             eager and torch.compile decode/prefill timings of the
                    benchmark model (docs/guide/models.md), medians; JSON out
  live              Strata's `strata forward` against PyTorch on the
                    benchmark models, f32 and bf16, cuda and cpu

Runs on the GPU machine (PyTorch, safetensors and transformers are there).
"""
import argparse
import json
import math
import os
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# ---------------------------------------------------------------- configs


def llama_config(**kw):
    c = dict(model_type="llama", vocab_size=256, hidden_size=512, num_hidden_layers=6,
             num_attention_heads=8, num_key_value_heads=2, intermediate_size=1408,
             max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
             tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
             hidden_act="silu")
    c.update(kw)
    return c


def gpt2_config(**kw):
    c = dict(model_type="gpt2", vocab_size=256, n_embd=512, n_layer=6, n_head=8,
             n_positions=2048, n_inner=None, layer_norm_epsilon=1e-5,
             activation_function="gelu_new", tie_word_embeddings=True)
    c.update(kw)
    return c


# ---------------------------------------------------------------- Llama


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):  # as transformers: statistics in f32, weight times x in x's dtype
        dt = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dt)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def rope(q, k, pos, theta):
    hd = q.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64, device=q.device).float() / hd))
    f = pos.float()[:, None] * inv[None, :]  # [T, hd/2], f32 as transformers
    emb = torch.cat((f, f), dim=-1)
    cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class KV:
    """A preallocated cache per layer: k, v [B, Hkv, max_len, hd]."""

    def __init__(self, layers, B, Hkv, max_len, hd, dtype, device):
        self.k = [torch.zeros(B, Hkv, max_len, hd, dtype=dtype, device=device) for _ in range(layers)]
        self.v = [torch.zeros_like(t) for t in self.k]
        self.len = 0


def attend(q, k, v, causal_offset):
    """q [B, H, T, hd], k/v [B, Hkv, N, hd]; causal bottom-right (N - T offset)."""
    H, Hkv = q.shape[1], k.shape[1]
    if Hkv != H:
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)
    T, N = q.shape[2], k.shape[2]
    if T == 1:
        return F.scaled_dot_product_attention(q, k, v)
    i = torch.arange(T, device=q.device)[:, None]
    j = torch.arange(N, device=q.device)[None, :]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=(j <= i + (N - T)))


class LlamaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        D, H, Hkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        hd = c.get("head_dim") or D // H
        self.H, self.Hkv, self.hd, self.theta = H, Hkv, hd, c["rope_theta"]
        self.input_layernorm = RMSNorm(D, c["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(D, c["rms_norm_eps"])
        a = nn.Module()
        a.q_proj = nn.Linear(D, H * hd, bias=False)
        a.k_proj = nn.Linear(D, Hkv * hd, bias=False)
        a.v_proj = nn.Linear(D, Hkv * hd, bias=False)
        a.o_proj = nn.Linear(H * hd, D, bias=False)
        self.self_attn = a
        m = nn.Module()
        m.gate_proj = nn.Linear(D, c["intermediate_size"], bias=False)
        m.up_proj = nn.Linear(D, c["intermediate_size"], bias=False)
        m.down_proj = nn.Linear(c["intermediate_size"], D, bias=False)
        self.mlp = m

    def forward(self, x, pos, kv, li):
        B, T, _ = x.shape
        h = self.input_layernorm(x)
        a = self.self_attn
        q = a.q_proj(h).view(B, T, self.H, self.hd).transpose(1, 2)
        k = a.k_proj(h).view(B, T, self.Hkv, self.hd).transpose(1, 2)
        v = a.v_proj(h).view(B, T, self.Hkv, self.hd).transpose(1, 2)
        q, k = rope(q, k, pos, self.theta)
        p0 = kv.len
        kv.k[li][:, :, p0:p0 + T] = k
        kv.v[li][:, :, p0:p0 + T] = v
        o = attend(q, kv.k[li][:, :, :p0 + T], kv.v[li][:, :, :p0 + T], p0)
        x = x + a.o_proj(o.transpose(1, 2).reshape(B, T, self.H * self.hd))
        h = self.post_attention_layernorm(x)
        m = self.mlp
        return x + m.down_proj(F.silu(m.gate_proj(h)) * m.up_proj(h))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.model.layers = nn.ModuleList([LlamaLayer(c) for _ in range(c["num_hidden_layers"])])
        self.model.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight

    def new_cache(self, B, max_len, dtype, device):
        c = self.c
        hd = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        return KV(c["num_hidden_layers"], B, c["num_key_value_heads"], max_len, hd, dtype, device)

    def forward(self, ids, kv):
        T = ids.shape[1]
        pos = torch.arange(kv.len, kv.len + T, device=ids.device)
        x = self.model.embed_tokens(ids)
        for li, layer in enumerate(self.model.layers):
            x = layer(x, pos, kv, li)
        kv.len += T
        return self.lm_head(self.model.norm(x)).float()


# ---------------------------------------------------------------- GPT-2


class Conv1D(nn.Module):
    """GPT-2's projection: weight stored [in, out]."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        D = c["n_embd"]
        inner = c["n_inner"] or 4 * D
        self.H, self.hd = c["n_head"], D // c["n_head"]
        self.ln_1 = nn.LayerNorm(D, eps=c["layer_norm_epsilon"])
        self.attn = nn.Module()
        self.attn.c_attn = Conv1D(D, 3 * D)
        self.attn.c_proj = Conv1D(D, D)
        self.ln_2 = nn.LayerNorm(D, eps=c["layer_norm_epsilon"])
        self.mlp = nn.Module()
        self.mlp.c_fc = Conv1D(D, inner)
        self.mlp.c_proj = Conv1D(inner, D)

    def forward(self, x, kv, li):
        B, T, D = x.shape
        qkv = self.attn.c_attn(self.ln_1(x))
        q, k, v = (t.view(B, T, self.H, self.hd).transpose(1, 2) for t in qkv.split(D, dim=2))
        p0 = kv.len
        kv.k[li][:, :, p0:p0 + T] = k
        kv.v[li][:, :, p0:p0 + T] = v
        o = attend(q, kv.k[li][:, :, :p0 + T], kv.v[li][:, :, :p0 + T], p0)
        x = x + self.attn.c_proj(o.transpose(1, 2).reshape(B, T, D))
        h = self.mlp.c_fc(self.ln_2(x))
        return x + self.mlp.c_proj(F.gelu(h, approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        t = nn.Module()
        t.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        t.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        t.h = nn.ModuleList([GPT2Block(c) for _ in range(c["n_layer"])])
        t.ln_f = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.transformer = t

    def new_cache(self, B, max_len, dtype, device):
        c = self.c
        return KV(c["n_layer"], B, c["n_head"], max_len, c["n_embd"] // c["n_head"], dtype, device)

    def forward(self, ids, kv):
        T = ids.shape[1]
        pos = torch.arange(kv.len, kv.len + T, device=ids.device)
        t = self.transformer
        x = t.wte(ids) + t.wpe(pos)[None]
        for li, blk in enumerate(t.h):
            x = blk(x, kv, li)
        kv.len += T
        return F.linear(t.ln_f(x), t.wte.weight).float()  # tied output


def build(c):
    return Llama(c) if c["model_type"] == "llama" else GPT2(c)


def state_for_file(model):
    """Hugging Face names; the tied lm_head is not stored (as save_pretrained does)."""
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if model.c.get("tie_word_embeddings"):
        sd.pop("lm_head.weight", None)
    return sd


def load_file_into(model, sd):
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if not (m == "lm_head.weight" and model.c.get("tie_word_embeddings"))]
    assert not missing and not unexpected, (missing, unexpected)


# ---------------------------------------------------------------- fixtures


@torch.no_grad()
def greedy(model, prompt, steps, device):
    kv = model.new_cache(1, prompt.shape[1] + steps + 1, torch.float32, device)
    logits = model(prompt, kv)
    out, margins = [], []
    for _ in range(steps):
        last = logits[0, -1]
        top2 = torch.topk(last, 2).values
        margins.append(float(top2[0] - top2[1]))
        tok = int(last.argmax())
        out.append(tok)
        logits = model(torch.tensor([[tok]], device=device), kv)
    return np.array(out, dtype=np.int64), np.array(margins, dtype=np.float32)


@torch.no_grad()
def init_spread(model, seed, embed_std=1.0):
    """Random weights with logits spread wide enough that greedy decoding has
    clear winners (HF's std 0.02 gives near-uniform logits and near-ties)."""
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if p.dim() == 1:
            p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g) if name.endswith("weight")
                    else 0.1 * torch.randn(p.shape, generator=g))
        else:
            fan_in = p.shape[0] if "transformer.h" in name else p.shape[-1]
            std = embed_std if ("embed" in name or "wte" in name or "wpe" in name) else 1.0 / math.sqrt(fan_in)
            p.copy_(std * torch.randn(p.shape, generator=g))


def write_fixture(out_dir, c, model, prompt_text, steps, device, dtype_file=torch.float32,
                  save_weights=True):
    from safetensors.torch import save_file
    os.makedirs(out_dir, exist_ok=True)
    sd = {k: v.to(dtype_file).cpu() for k, v in state_for_file(model).items()}
    if save_weights:  # the shipped model's fixture points at the model's own files
        save_file(sd, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(out_dir, "config.json"), "w") as f:
            json.dump(c, f, indent=2)
    # The reference runs in f32 on exactly the stored (possibly bf16) weights.
    load_file_into(model, {k: v.float().to(device) for k, v in sd.items()})
    model.float()
    prompt = torch.tensor([list(prompt_text.encode())], dtype=torch.int64, device=device)
    kv = model.new_cache(1, prompt.shape[1], torch.float32, device)
    with torch.no_grad():
        logits = model(prompt, kv)
    g, m = greedy(model, prompt, steps, device)
    # One safetensors file, which the C++ tests read with Strata's own reader.
    save_file({"prompt": prompt.cpu(), "logits": logits.cpu().float().contiguous(),
               "greedy": torch.from_numpy(g), "margin": torch.from_numpy(m)},
              os.path.join(out_dir, "expected.safetensors"))
    print(f"{out_dir}: prompt {prompt.shape[1]} tokens, logits {tuple(logits.shape)}, "
          f"greedy {len(g)} (smallest top-2 margin {m.min():.3g}): {bytes(g.astype(np.uint8)).decode('latin-1')!r}")


def cmd_fixtures(a):
    torch.manual_seed(0)
    dev = a.device
    prompt = "The quick brown fox "
    small_llama = llama_config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, intermediate_size=160,
                               max_position_embeddings=256)
    small_gpt2 = gpt2_config(n_embd=64, n_layer=2, n_head=4, n_positions=256)
    ids = torch.tensor([list(prompt.encode())], dtype=torch.int64, device=dev)
    for name, c in (("llama", small_llama), ("gpt2", small_gpt2)):
        # The first seed whose greedy continuation is varied (not one token
        # repeated) and has no near-tie, so that token-for-token equality is
        # a fair test of another implementation.
        for seed in range(1000, 1100):
            m = build(c)
            init_spread(m, seed=seed, embed_std=0.5)
            m = m.to(dev)
            g, margin = greedy(m, ids, 64, dev)
            if len(set(g.tolist())) >= 16 and margin.min() > 0.02:
                break
        print(f"{name}: seed {seed}")
        write_fixture(os.path.join(a.out, name), c, m, prompt, 64, dev)
    if a.tiny:
        with open(os.path.join(a.tiny, "config.json")) as f:
            c = json.load(f)
        from safetensors.torch import load_file
        m = build(c)
        load_file_into(m, load_file(os.path.join(a.tiny, "model.safetensors")))
        write_fixture(os.path.join(a.out, "tiny"), c, m.float().to(dev),
                      "This program is free software", 64, dev, dtype_file=torch.bfloat16,
                      save_weights=False)


# ---------------------------------------------------------------- transformers check


def cmd_check(a):
    """Our plain definitions against transformers' classes: same weights, same logits."""
    import transformers as tf
    dev = a.device
    res = {}
    for style in ("llama", "gpt2"):
        if style == "llama":
            c = llama_config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, intermediate_size=160, max_position_embeddings=256)
            ref = tf.LlamaForCausalLM(tf.LlamaConfig(**{k: v for k, v in c.items() if k != "model_type"}))
        else:
            c = gpt2_config(n_embd=64, n_layer=2, n_head=4, n_positions=256)
            ref = tf.GPT2LMHeadModel(tf.GPT2Config(**{k: v for k, v in c.items() if k != "model_type"}))
        m = build(c)
        init_spread(m, seed=7)
        sd = state_for_file(m)
        missing, unexpected = ref.load_state_dict(sd, strict=False)
        ids = torch.randint(0, 256, (2, 24))
        m.float().eval()
        ref.float().eval()
        with torch.no_grad():
            ours = m(ids, m.new_cache(2, 24, torch.float32, "cpu"))
            theirs = ref(ids).logits.float()
        err = float((ours - theirs).abs().max() / theirs.abs().max())
        res[style] = dict(rel_err=err, missing=list(missing), unexpected=list(unexpected))
        print(f"{style}: plain vs transformers {tf.__version__}: max rel err {err:.3g}; "
              f"missing {missing} unexpected {unexpected}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


# ---------------------------------------------------------------- bench


def time_ms(fn, reps, sync):
    for _ in range(3):
        fn()
    sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def cmd_bench(a):
    dev = a.device
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    if dev == "cpu" and a.threads:
        torch.set_num_threads(a.threads)
    c = (llama_config() if a.style == "llama" else
         gpt2_config(n_embd=512, n_layer=6, n_head=8))
    dt = dict(f32=torch.float32, bf16=torch.bfloat16)[a.dtype]
    m = build(c)
    init_spread(m, seed=0)
    m = m.to(dev, dt).eval()
    nparam = sum(p.numel() for p in m.parameters())
    res = dict(style=a.style, dtype=a.dtype, device=dev, threads=torch.get_num_threads(),
               params=nparam, torch=torch.__version__)
    P = a.pos
    with torch.no_grad():
        for B in a.batches:
            kv = m.new_cache(B, P + 64, dt, dev)
            m(torch.randint(0, 256, (B, P), device=dev), kv)
            tok = torch.randint(0, 256, (B, 1), device=dev)

            def step():
                kv.len = P
                m(tok, kv)
            res[f"decode_b{B}_ms"] = time_ms(step, a.reps, sync)
            if a.compile and B == 1:
                cm = torch.compile(m, mode="reduce-overhead")

                def cstep():
                    kv.len = P
                    cm(tok, kv)
                for _ in range(3):
                    cstep()
                res[f"decode_b{B}_compile_ms"] = time_ms(cstep, a.reps, sync)
        ids = torch.randint(0, 256, (1, a.prefill), device=dev)
        kv = m.new_cache(1, a.prefill, dt, dev)

        def pre():
            kv.len = 0
            m(ids, kv)
        ms = time_ms(pre, max(3, a.reps // 10), sync)
        res["prefill_tokens"] = a.prefill
        res["prefill_ms"] = ms
        res["prefill_tok_s"] = a.prefill / ms * 1e3
    print(json.dumps(res))
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(res) + "\n")


def cmd_live(a):
    """Strata's `forward` against PyTorch on the benchmark models, f32 and
    bf16, on the GPU: Strata's error against PyTorch's f32 logits next to
    PyTorch's own bf16 error against its f32 (issue 14's bf16 rule: within 2x)."""
    import subprocess
    import tempfile
    from safetensors.torch import save_file
    dev = "cuda"
    rows = []
    for style in ("llama", "gpt2"):
        c = llama_config() if style == "llama" else gpt2_config(n_embd=512, n_layer=6, n_head=8)
        m = build(c)
        init_spread(m, seed=5, embed_std=0.5)
        m = m.to(dev).eval()
        d = tempfile.mkdtemp()
        save_file({k: v.cpu() for k, v in state_for_file(m).items()}, f"{d}/model.safetensors")
        with open(f"{d}/config.json", "w") as f:
            json.dump(c, f)
        ids = torch.randint(0, 256, (2, 64), generator=torch.Generator().manual_seed(3))
        np.save(f"{d}/ids.npy", ids.numpy())
        with torch.no_grad():
            ref32 = m(ids.to(dev), m.new_cache(2, 64, torch.float32, dev)).double().cpu()
            mb = build(c).to(dev)
            mb.load_state_dict(m.state_dict())
            mb = mb.to(torch.bfloat16).eval()
            ref16 = mb(ids.to(dev), mb.new_cache(2, 64, torch.bfloat16, dev)).double().cpu()
        scale = float(ref32.abs().max())
        torch_bf16 = float((ref16 - ref32).abs().max()) / scale
        for dt in ("f32", "bf16"):
            for be in ("cuda", "cpu"):
                out = f"{d}/logits_{dt}_{be}.npy"
                r = subprocess.run([a.strata, "forward", "--weights", f"{d}/model.safetensors",
                                    "--config", f"{d}/config.json", "--tokens", f"{d}/ids.npy",
                                    "--out", out, "--dtype", dt, "--backend", be],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    rows.append(dict(style=style, dtype=dt, backend=be, error=r.stderr.strip()))
                    continue
                got = torch.from_numpy(np.load(out)).double()
                err = float((got - ref32).abs().max()) / scale
                row = dict(style=style, dtype=dt, backend=be, rel_err_vs_torch_f32=err)
                if dt == "bf16":
                    row["torch_bf16_rel_err"] = torch_bf16
                    row["ratio"] = err / torch_bf16
                rows.append(row)
                print(json.dumps(row), flush=True)
    if a.out:
        with open(os.path.join(a.out, "live_parity.json"), "w") as f:
            json.dump(rows, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fixtures")
    f.add_argument("out")
    f.add_argument("--tiny", help="directory of the trained tiny model (config.json, model.safetensors)")
    f.add_argument("--device", default="cpu")
    c = sub.add_parser("check")
    c.add_argument("--device", default="cpu")
    c.add_argument("--json")
    lv = sub.add_parser("live")
    lv.add_argument("--strata", required=True, help="the strata binary")
    lv.add_argument("--out")
    b = sub.add_parser("bench")
    b.add_argument("--style", choices=["llama", "gpt2"], default="llama")
    b.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    b.add_argument("--device", default="cuda")
    b.add_argument("--threads", type=int, default=0)
    b.add_argument("--batches", type=int, nargs="+", default=[1])
    b.add_argument("--pos", type=int, default=512)
    b.add_argument("--prefill", type=int, default=512)
    b.add_argument("--reps", type=int, default=50)
    b.add_argument("--compile", action="store_true")
    b.add_argument("--json")
    a = p.parse_args()
    dict(fixtures=cmd_fixtures, check=cmd_check, bench=cmd_bench, live=cmd_live)[a.cmd](a)


if __name__ == "__main__":
    main()
