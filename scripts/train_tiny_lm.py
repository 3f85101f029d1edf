#!/usr/bin/env python3
"""Trains the tiny byte-level Llama-style model shipped in models/tiny-llama/
(docs/guide/models.md) on the licence texts Debian ships in /usr/share/common-licenses,
with PyTorch on the GPU machine (about a minute on an H200). Writes
config.json and model.safetensors (bf16, Hugging Face names) to OUT.

  python3 scripts/train_tiny_lm.py --text DIR --out models/tiny-llama [--steps N]
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import peer_model as pm  # noqa: E402

TINY = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=512, max_position_embeddings=512, tie_word_embeddings=False)


def corpus(d):
    parts = []
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as f:
                parts.append(f.read())
    return b"\n\n".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--text", default="/usr/share/common-licenses")
    ap.add_argument("--out", default="models/tiny-llama")
    ap.add_argument("--steps", type=int, default=2500)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    dev = "cuda"
    data = torch.tensor(list(corpus(a.text)), dtype=torch.int64)
    n_val = len(data) // 20
    train, val = data[:-n_val].to(dev), data[-n_val:].to(dev)
    c = pm.llama_config(**TINY)
    m = pm.build(c).to(dev)
    for name, p in m.named_parameters():
        if p.dim() == 2:
            torch.nn.init.normal_(p, std=0.02)
    nparam = sum(p.numel() for p in m.parameters())
    print(f"corpus {len(data)} bytes, model {nparam / 1e6:.2f}M parameters", flush=True)
    opt = torch.optim.AdamW(m.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.1)

    def batch(src):
        i = torch.randint(0, len(src) - a.seq - 1, (a.batch,), device=dev)
        off = torch.arange(a.seq + 1, device=dev)
        w = src[i[:, None] + off[None]]
        return w[:, :-1], w[:, 1:]

    def loss_of(x, y):
        kv = m.new_cache(x.shape[0], x.shape[1], torch.float32, dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = m(x, kv)
        return F.cross_entropy(logits.view(-1, 256), y.reshape(-1))

    t0 = time.time()
    for step in range(a.steps):
        lr = a.lr * min(1.0, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * step / a.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch(train)
        loss = loss_of(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        if step % 250 == 0 or step == a.steps - 1:
            with torch.no_grad():
                vl = loss_of(*batch(val)).item()
            print(f"step {step} loss {loss.item():.3f} val {vl:.3f} ({time.time() - t0:.0f} s)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    from safetensors.torch import save_file
    sd = {k: v.to(torch.bfloat16).cpu() for k, v in pm.state_for_file(m).items()}
    save_file(sd, os.path.join(a.out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    m.load_state_dict({k: v.float() for k, v in sd.items()}, strict=False)
    prompt = torch.tensor([list(b"This program is free software")], device=dev)
    g, _ = pm.greedy(m.float().eval(), prompt, 120, dev)
    print("greedy:", repr(bytes(g.tolist()).decode("latin-1")))


if __name__ == "__main__":
    main()
