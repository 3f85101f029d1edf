#!/usr/bin/env python3
"""End-to-end test of `strata info`, `strata info --kernels` and
`strata info --tuning`: plain info stays short (build, backends, devices, op
count), the kernel table is behind --kernels and says that attention runs
bf16/f16 via f32 where a backend has no half kernel, and --tuning prints one
line per switch of core/src/tuning.cpp with its current value.

usage: python3 test_cli_info.py /path/to/strata /path/to/source
Needs no NumPy.
"""
import os
import re
import subprocess
import sys

from cli_checks import check, finish

STRATA = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(sys.argv[2])


def run(*args, env=None):
    return subprocess.run([STRATA, "info", *args], capture_output=True, text=True,
                          env=None if env is None else {**os.environ, **env})


# ---- the kernel table ------------------------------------------------------------------
r = run("--kernels")
check(r.returncode == 0, f"info --kernels: exit 0 ({r.stderr.strip()})")
lines = r.stdout.splitlines()
start = [i for i, l in enumerate(lines) if l.startswith("kernels (")]
check(len(start) == 1, "info --kernels: one kernel table")
rows = []
for l in lines[start[0] + 2 if start else len(lines):]:
    if not l.startswith("  "):
        break
    rows.append(l.split())
ops = sorted({row[0] for row in rows})
check(len(rows) > 20 and "softmax_attention" in ops, f"info --kernels: {len(rows)} kernel rows")
# softmax_attention on a backend without f16/bf16 kernels converts to f32
# (ops/src/attention.cpp): the table says so instead of listing f32/f64 only.
attn = [l for l in lines if l.split()[:1] == ["softmax_attention"]]
for backend in ("reference", "cpu"):
    mine = [l for l in attn if l.split()[1] == backend]
    check(mine and any("bf16/f16 via f32" in l for l in mine),
          f"info --kernels: {backend} attention says bf16/f16 via f32 ({mine})")

# ---- plain info: short ------------------------------------------------------------------
r = run()
out = r.stdout
check(r.returncode == 0, f"info: exit 0 ({r.stderr.strip()})")
check(len(out.splitlines()) <= 30, f"info: short ({len(out.splitlines())} lines)")
for part in ("build: ", "backends:", "devices:"):
    check(part in out, f"info: has '{part}'")
check("kernels (" not in out and "cpu.attention" not in out, "info: no kernel table")
m = re.search(r"^ops: (\d+) ops, (\d+) kernels", out, re.M)
check(m and int(m.group(1)) == len(ops) and int(m.group(2)) == len(rows),
      f"info: op and kernel counts match --kernels ({m.group(0) if m else out[:300]!r}; "
      f"{len(ops)} ops, {len(rows)} rows)")
check("--kernels" in out and "--tuning" in out, "info: names --kernels and --tuning")

# ---- the tuning switchboard --------------------------------------------------------------
names = re.findall(r'\{"(STRATA_[A-Z0-9_]+)"', open(f"{ROOT}/core/src/tuning.cpp").read())
check(len(names) > 5, f"tuning.cpp lists {len(names)} switches")
r = run("--tuning", env={"STRATA_CPU_ISA": "generic", "STRATA_FLASH_SPLITS": "3"})
check(r.returncode == 0, f"info --tuning: exit 0 ({r.stderr.strip()})")
rows = [l.split(None, 2) for l in r.stdout.splitlines() if l.strip().startswith("STRATA_")]
check([row[0] for row in rows] == names,
      f"info --tuning: one line per switch, in order ({len(rows)} lines, {len(names)} switches)")
values = {row[0]: row[1] for row in rows if len(row) == 3}
check(values.get("STRATA_CPU_ISA") == "generic" and values.get("STRATA_FLASH_SPLITS") == "3" and
      values.get("STRATA_FUSED_RESIDUAL") == "auto",
      f"info --tuning: current values ({values})")
check(len(values) == len(rows), "info --tuning: every line has name, value and help")
r = run("--tuning", env={"STRATA_CPU_ISA": "sse9"})
err = r.stderr.strip()
check(r.returncode == 1 and len(err.splitlines()) == 1 and "STRATA_CPU_ISA" in err and
      "sse9" in err, f"info --tuning with a bad switch: one line naming it ({err})")

finish()
