#!/usr/bin/env python3
"""`strata train` end to end (docs/guide/cli.md): 20 steps with --stop-at then
--resume give the bytes of 40 uninterrupted steps; the CSV log; the
checkpoint loads in `strata generate`; each bad input is one error line
before training, and the out folder keeps what it held.

usage: test_cli_train.py STRATA_BINARY
"""
import filecmp
import json
import os
import subprocess
import sys
import tempfile

STRATA = sys.argv[1]
CONFIG = {"model_type": "llama", "vocab_size": 256, "hidden_size": 32,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
          "intermediate_size": 64, "max_position_embeddings": 64}
failures = []


def run(args, expect_rc=0, error=None):
    p = subprocess.run([STRATA, "train"] + args, capture_output=True, text=True)
    ok = p.returncode == expect_rc and (error is None or error in p.stderr)
    if not ok:
        failures.append(f"{args}: rc {p.returncode} (want {expect_rc}), stderr: {p.stderr[-400:]}"
                        f" (want {error!r})")
    return p


with tempfile.TemporaryDirectory() as tmp:
    def path(*names):
        return os.path.join(tmp, *names)

    with open(path("config.json"), "w") as f:
        json.dump(CONFIG, f)
    with open(path("data.txt"), "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 50)
    base = ["--config", path("config.json"), "--data", path("data.txt"), "--seq-len", "16",
            "--batch", "2", "--accum", "2", "--steps", "20", "--lr", "3e-3", "--schedule",
            "cosine", "--warmup", "5", "--min-lr", "3e-4", "--val-fraction", "0.1",
            "--val-every", "5", "--order", "shuffled", "--seed", "3"]

    # Resume: 10 + 10 == 20, byte for byte.
    run(base + ["--out", path("whole")])
    run(base + ["--out", path("parts"), "--stop-at", "10", "--save-every", "3"])
    run(["--resume", path("parts"), "--out", path("parts")])
    for name in ("model.safetensors", "optimizer.safetensors"):
        a, b = path("whole", "checkpoint", name), path("parts", "checkpoint", name)
        if not filecmp.cmp(a, b, shallow=False):
            failures.append(f"resumed {name} differs from the uninterrupted run's")
    with open(path("parts", "checkpoint", "trainer_state.json")) as f:
        state = json.load(f)
    if state["step"] != 20 or state["options"]["order"] != "shuffled":
        failures.append(f"trainer_state.json: {state}")

    # Mixed precision: bf16 weights in the checkpoint, f32 masters beside
    # them in optimizer.safetensors, and resume is byte for byte too.
    bf16 = base + ["--dtype", "bf16"]
    run(bf16 + ["--out", path("b_whole")])
    run(bf16 + ["--out", path("b_parts"), "--stop-at", "10"])
    run(["--resume", path("b_parts"), "--out", path("b_parts")])
    for name in ("model.safetensors", "optimizer.safetensors"):
        a, b = path("b_whole", "checkpoint", name), path("b_parts", "checkpoint", name)
        if not filecmp.cmp(a, b, shallow=False):
            failures.append(f"bf16: resumed {name} differs from the uninterrupted run's")

    def header(name):
        with open(name, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            return {k: v for k, v in json.loads(f.read(n)).items() if k != "__metadata__"}

    weights = header(path("b_whole", "checkpoint", "model.safetensors"))
    if {v["dtype"] for v in weights.values()} != {"BF16"}:
        failures.append(f"bf16: model.safetensors dtypes {sorted({v['dtype'] for v in weights.values()})}")
    # One f32 master per parameter the optimizer updates (the model's own
    # tensors: q/k/v and gate/up are fused there, so fewer than the file's names).
    state = header(path("b_whole", "checkpoint", "optimizer.safetensors"))
    masters = {k: v for k, v in state.items() if k.startswith("master.")}
    params = [k for k in state if k.startswith("exp_avg.")]
    if not params or len(masters) != len(params) or {v["dtype"] for v in masters.values()} != {"F32"}:
        failures.append(f"bf16: {len(masters)} master weights for {len(params)} parameters")
    run(["--resume", path("b_whole"), "--out", path("b_whole"), "--steps", "30", "--dtype", "f32"],
        2, "--dtype (saved: bf16)")

    # The log: a header, one row per step, val_loss every 10 steps.
    with open(path("parts", "train_log.csv")) as f:
        rows = [line.rstrip("\n").split(",") for line in f]
    if rows[0] != ["step", "loss", "val_loss", "lr", "grad_norm", "tokens_per_s"]:
        failures.append(f"CSV header {rows[0]}")
    if [int(r[0]) for r in rows[1:]] != list(range(1, 21)):
        failures.append(f"CSV steps {[r[0] for r in rows[1:]]}")
    if [int(r[0]) for r in rows[1:] if r[2]] != [5, 10, 15, 20]:
        failures.append("CSV val_loss not at steps 5, 10, 15, 20")
    if not float(rows[-1][1]) < 0.8 * float(rows[1][1]):
        failures.append(f"loss did not fall: {rows[1][1]} -> {rows[-1][1]}")

    # The checkpoint is a model for `strata generate`.
    g = subprocess.run([STRATA, "generate", "--config", path("parts", "checkpoint", "config.json"),
                        "--weights", path("parts", "checkpoint", "model.safetensors"),
                        "--prompt", "the", "--max-tokens", "8"], capture_output=True, text=True)
    if g.returncode != 0:
        failures.append(f"generate on the checkpoint: {g.stderr}")

    # Bad input: one error line, nothing written or lost.
    fresh = path("fresh")
    run(base[:2] + ["--data", path("missing.txt")] + base[4:] + ["--out", fresh], 1,
        "no such file or folder")
    run([a if a != "20" else "0" for a in base] + ["--out", fresh], 1, "--steps 0 must be >= 1")
    with open(path("short.txt"), "w") as f:
        f.write("too short")
    run(base[:2] + ["--data", path("short.txt")] + base[4:] + ["--out", fresh], 1,
        "needs at least 18 training tokens")
    if os.path.exists(fresh):
        failures.append("a refused run created its out folder")
    os.makedirs(path("foreign"))
    with open(path("foreign", "notes.txt"), "w") as f:
        f.write("keep me")
    run(base + ["--out", path("foreign")], 1, "holds 'notes.txt', which strata train did not write")
    with open(path("foreign", "notes.txt")) as f:
        if f.read() != "keep me":
            failures.append("the foreign file changed")
    before = open(path("whole", "checkpoint", "model.safetensors"), "rb").read()
    run(base + ["--out", path("whole")], 1, "holds a checkpoint (step 20)")
    if open(path("whole", "checkpoint", "model.safetensors"), "rb").read() != before:
        failures.append("a refused run changed the existing checkpoint")
    run(["--resume", path("whole"), "--out", path("whole"), "--lr", "1"], 2,
        "given other values than the checkpoint's: --lr (saved: 0.003)")
    run(base + ["--out", path("data.txt", "out")], 1, "cannot write in")
    if os.geteuid() != 0:  # root writes anywhere
        os.makedirs(path("locked"))
        os.chmod(path("locked"), 0o500)
        run(base + ["--out", path("locked", "out")], 1, "cannot write in")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("test_cli_train: ok")
