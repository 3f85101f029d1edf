#!/usr/bin/env python3
"""End-to-end test of `strata forward` and `strata generate` with the shipped
tiny model (models/tiny-llama) against PyTorch's fixture
(tests/data/parity/tiny/expected.safetensors, written by bench/peer_model.py):
logits of the prompt from a .npy of ids (int64 and int32, [1, T] and [T]),
the greedy continuation as printed text and as ids, seeded sampling that
repeats itself, and bad inputs that exit non-zero with one line on stderr and
leave no output behind.

usage: /usr/bin/python3 test_cli_models.py /path/to/strata /path/to/source
Exit 77 (CTest: skipped) when NumPy is missing.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

from cli_checks import check, finish

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not importable by %s" % sys.executable)
    sys.exit(77)

STRATA = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(sys.argv[2])
MODEL = ["--weights", f"{ROOT}/models/tiny-llama/model.safetensors",
         "--config", f"{ROOT}/models/tiny-llama/config.json"]


def read_safetensors(path):
    """A minimal independent reader (F32 and I64 only) for the fixture."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    hdr = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        dt = {"F32": np.float32, "I64": np.int64}[v["dtype"]]
        out[k] = np.frombuffer(data[base + b:base + e], dtype=dt).reshape(v["shape"])
    return out


def run(*args):
    return subprocess.run([STRATA, *args], capture_output=True)


exp = read_safetensors(f"{ROOT}/tests/data/parity/tiny/expected.safetensors")
prompt, logits, greedy = exp["prompt"], exp["logits"], exp["greedy"]
tmp = tempfile.mkdtemp()

# ---- forward ---------------------------------------------------------------------------
for name, ids in (("int64 [1, T]", prompt), ("int32 [T]", prompt[0].astype(np.int32))):
    np.save(f"{tmp}/ids.npy", ids)
    r = run("forward", *MODEL, "--tokens", f"{tmp}/ids.npy", "--out", f"{tmp}/logits.npy")
    check(r.returncode == 0, f"forward {name}: exit 0 ({r.stderr.decode().strip()})")
    if r.returncode == 0:
        got = np.load(f"{tmp}/logits.npy")
        check(got.dtype == np.float32 and got.shape == logits.shape,
              f"forward {name}: f32 {logits.shape} (got {got.dtype} {got.shape})")
        err = np.abs(got - logits).max() / np.abs(logits).max()
        check(err < 1e-4, f"forward {name}: logits within 1e-4 of PyTorch's (rel. err {err:.2e})")
np.save(f"{tmp}/batch.npy", np.stack([prompt[0], prompt[0][::-1]]))
r = run("forward", *MODEL, "--tokens", f"{tmp}/batch.npy", "--out", f"{tmp}/b.npy")
check(r.returncode == 0 and np.allclose(np.load(f"{tmp}/b.npy")[0], logits[0], rtol=0, atol=1e-4 * np.abs(logits).max()),
      "forward: a batch of 2, row 0 equals the single prompt")

# ---- generate --------------------------------------------------------------------------
text = bytes(prompt[0].astype(np.uint8)).decode()
r = run("generate", *MODEL, "--prompt", text, "--max-tokens", "64", "--print-ids")
out = r.stdout.decode("latin-1")
want = text + bytes(greedy.astype(np.uint8)).decode("latin-1")
check(r.returncode == 0 and out.rstrip("\n") == want,
      f"generate greedy: prompt + PyTorch's 64 greedy tokens ({out!r})")
ids_line = [l for l in r.stderr.decode().splitlines() if l.startswith("ids: ")]
check(ids_line and [int(x) for x in ids_line[0][5:].split()] == greedy.tolist(),
      "generate --print-ids: PyTorch's greedy ids")
check("tokens/s" in r.stderr.decode(), "generate: reports tokens/s")
a = run("generate", *MODEL, "--prompt", "The ", "--max-tokens", "40", "--temperature", "0.8",
        "--top-k", "20", "--top-p", "0.9", "--seed", "7")
b = run("generate", *MODEL, "--prompt", "The ", "--max-tokens", "40", "--temperature", "0.8",
        "--top-k", "20", "--top-p", "0.9", "--seed", "7")
check(a.returncode == 0 and a.stdout == b.stdout and len(a.stdout) > 40,
      "generate: the same seed gives the same sampled text")

# ---- the command line agrees with itself -----------------------------------------------
# --top-p: the help states the range the sampler checks, (0, 1] as in
# transformers; 0 is refused (below, with the bad input), 1 accepted.
h = run("generate", "--help").stdout.decode()
top_p = [l for l in h.splitlines() if l.strip().startswith("--top-p")]
check(top_p and "(0, 1]" in top_p[0] and "[0 - 1]" not in top_p[0],
      f"generate --help: --top-p says (0, 1] ({top_p[0].strip() if top_p else h!r})")
r = run("generate", *MODEL, "--prompt", "The ", "--max-tokens", "4", "--top-p", "1")
check(r.returncode == 0, f"generate --top-p 1: exit 0 ({r.stderr.decode().strip()})")
# --top-k / --top-p without a temperature: greedy, as transformers does with
# do_sample=False, with one warning line that they have no effect.
greedy4 = run("generate", *MODEL, "--prompt", "The ", "--max-tokens", "4")
check(greedy4.returncode == 0 and "warning" not in greedy4.stderr.decode(),
      "generate greedy: no warning")
for flags in (["--top-k", "5"], ["--top-p", "0.5"], ["--top-k", "5", "--top-p", "0.5"]):
    r = run("generate", *MODEL, "--prompt", "The ", "--max-tokens", "4", *flags)
    warn = [l for l in r.stderr.decode().splitlines() if "warning" in l]
    check(r.returncode == 0 and r.stdout == greedy4.stdout and len(warn) == 1 and
          warn[0].startswith("strata: warning: ") and "no effect" in warn[0] and
          "temperature 0" in warn[0] and "greedy" in warn[0] and
          all(f in warn[0] for f in flags if f.startswith("--")),
          f"generate {' '.join(flags)} without --temperature: greedy, one warning ({warn})")
r = run("generate", *MODEL, "--prompt", "The ", "--max-tokens", "4", "--temperature", "0.8",
        "--top-k", "5")
check(r.returncode == 0 and "warning" not in r.stderr.decode(),
      "generate --temperature 0.8 --top-k 5: no warning")
# The summaries name the backend that ran and where its tensors live.
for backend, want in (("reference", "on reference (cpu memory)"), ("cpu", "on cpu (cpu memory)"),
                      ("auto", "on cpu (cpu memory)")):
    r = run("generate", *MODEL, "--prompt", "The ", "--max-tokens", "2", "--backend", backend)
    check(r.returncode == 0 and want in r.stderr.decode(),
          f"generate --backend {backend}: '{want}' ({r.stderr.decode().strip()})")
    r = run("forward", *MODEL, "--tokens", f"{tmp}/ids.npy", "--out", f"{tmp}/l.npy",
            "--backend", backend)
    check(r.returncode == 0 and want in r.stderr.decode(),
          f"forward --backend {backend}: '{want}' ({r.stderr.decode().strip()})")
# forward's summary states the dtype of the file it wrote: float32 logits,
# also from a bf16 model.
r = run("forward", *MODEL, "--tokens", f"{tmp}/ids.npy", "--out", f"{tmp}/l.npy", "--dtype", "bf16")
err = r.stderr.decode().strip()
check(r.returncode == 0 and np.load(f"{tmp}/l.npy").dtype == np.float32 and "bf16 model" in err
      and "f32 written to" in err, f"forward --dtype bf16: summary says f32 was written ({err})")
# forward holds ids to the model's context as generate does: 512 positions
# run, 513 are refused naming the count and the limit.
np.save(f"{tmp}/ctx.npy", np.zeros((1, 512), dtype=np.int64))
r = run("forward", *MODEL, "--tokens", f"{tmp}/ctx.npy", "--out", f"{tmp}/l.npy")
check(r.returncode == 0, f"forward: 512 positions, the whole context ({r.stderr.decode().strip()})")
np.save(f"{tmp}/long.npy", np.zeros((2, 513), dtype=np.int64))

# ---- bad input -------------------------------------------------------------------------
np.save(f"{tmp}/oov.npy", np.array([[1, 2, 256]], dtype=np.int64))
np.save(f"{tmp}/float.npy", np.array([[1.0, 2.0]], dtype=np.float32))
np.save(f"{tmp}/rank3.npy", np.zeros((1, 1, 2), dtype=np.int64))
with open(f"{tmp}/trunc.safetensors", "wb") as f:
    f.write(open(f"{ROOT}/models/tiny-llama/model.safetensors", "rb").read()[:100000])
bad = [
    ("an id outside the vocabulary", ["forward", *MODEL, "--tokens", f"{tmp}/oov.npy",
                                      "--out", f"{tmp}/o.npy"], "256"),
    ("float ids", ["forward", *MODEL, "--tokens", f"{tmp}/float.npy", "--out", f"{tmp}/o.npy"],
     "int32 or int64"),
    ("ids of rank 3", ["forward", *MODEL, "--tokens", f"{tmp}/rank3.npy", "--out", f"{tmp}/o.npy"],
     "[batch, T]"),
    ("a truncated weights file", ["forward", "--weights", f"{tmp}/trunc.safetensors", "--config",
                                  MODEL[3], "--tokens", f"{tmp}/batch.npy", "--out", f"{tmp}/o.npy"],
     "trunc.safetensors"),
    ("a missing config", ["generate", "--weights", MODEL[1], "--config", f"{tmp}/none.json",
                          "--prompt", "x"], "none.json"),
    ("--out is the ids file", ["forward", *MODEL, "--tokens", f"{tmp}/batch.npy",
                               "--out", f"{tmp}/batch.npy"], "--tokens"),
    ("past the context", ["generate", *MODEL, "--prompt", "x", "--max-tokens", "600"],
     "601 positions, past the model's context of 512 (max_position_embeddings)"),
    ("forward past the context", ["forward", *MODEL, "--tokens", f"{tmp}/long.npy",
                                  "--out", f"{tmp}/o.npy"],
     "513 positions, past the model's context of 512 (max_position_embeddings)"),
    ("--top-p 2", ["generate", *MODEL, "--prompt", "x", "--top-p", "2"], "--top-p"),
    ("--top-p 0", ["generate", *MODEL, "--prompt", "x", "--top-p", "0"], "--top-p"),
    ("--temperature nan", ["generate", *MODEL, "--prompt", "x", "--temperature", "nan"],
     "temperature"),
    ("a config value nested 200,000 deep", ["generate", "--weights", MODEL[1], "--config",
                                            f"{tmp}/deep.json", "--prompt", "x"], "vocab_size"),
]
cfg = json.load(open(MODEL[3]))
with open(f"{tmp}/deep.json", "w") as f:
    f.write(json.dumps(cfg)[:-1] + ', "vocab_size": ' + "[" * 200000 + "]" * 200000 + "}")
for what, args, needle in bad:
    before = set(os.listdir(tmp))
    r = run(*args)
    err = r.stderr.decode().strip()
    check(r.returncode in (1, 2) and needle in err and len(err.splitlines()) == 1,
          f"{what}: exit {r.returncode}, one line naming '{needle}' ({err[:160]})")
    check(set(os.listdir(tmp)) == before, f"{what}: no file written")
    check(r.stdout == b"", f"{what}: nothing on stdout ({r.stdout[:40]!r})")

finish()
