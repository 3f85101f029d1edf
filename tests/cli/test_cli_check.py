#!/usr/bin/env python3
"""End-to-end test of `strata check --group`: the gradient part runs the
gradient runner's grad:<family> groups (a summary table with cases passed,
how many of them were checked against finite differences too, and the line
that ends it), the op part runs ops:<family>, each filter reaches only its
own part, and a group no part has is a usage error. The sweeps themselves
run in strata_tests; these are small groups, seconds in all.

usage: python3 test_cli_check.py /path/to/strata
Needs no NumPy.
"""
import os
import re
import subprocess
import sys

from cli_checks import check, finish

STRATA = os.path.abspath(sys.argv[1])


def run(*args):
    return subprocess.run([STRATA, "check", *args], capture_output=True, text=True)


# ---- the gradient part alone --------------------------------------------------------------
r = run("--group", "grad:index_copy")
out = r.stdout
check(r.returncode == 0, f"check --group grad:index_copy: exit 0 ({r.stderr.strip()[-300:]})")
check("the gradients of 4 op descriptors" in out, "grad:index_copy: its 4 descriptors' gradients")
row = re.search(r"^\s+grad:index_copy\s+(\d+)/(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", out, re.M)
check(row is not None, f"grad:index_copy: a row in the table ({out[-800:]!r})")
if row:
    passed, run_, fd, not_diff, no_bwd = map(int, row.groups())
    # 4 descriptors x 4 floating dtypes x 6 layouts; the integer and bool
    # dtypes have nothing to differentiate; three are small enough for
    # finite differences (f64, contiguous: once each).
    check(passed == run_ == 96, f"grad:index_copy: 96/96 cases pass ({passed}/{run_})")
    check(fd == 3, f"grad:index_copy: 3 checked against finite differences ({fd})")
    check(not_diff == 72 and no_bwd == 0, f"grad:index_copy: 72 integer/bool, 0 refused "
          f"({not_diff}, {no_bwd})")
check(re.search(r"^all 96 gradient cases pass on every backend$", out, re.M) is not None,
      "grad:index_copy: the closing line")
check("cases on" not in out and "op cases pass" not in out,
      "grad:index_copy: no attention case and no op case run")

# ---- the backward kernels are listed as refusing, not failing -------------------------------
r = run("--group", "grad:activation backward")
out = r.stdout
check(r.returncode == 0, f"check --group 'grad:activation backward': exit 0 ({r.stderr[-300:]})")
check("NO BACKWARD (refused under a tape):" in out and "'relu_backward'" in out,
      "grad:activation backward: the refusing ops named")
check("all 0 gradient cases pass on every backend" in out,
      "grad:activation backward: nothing run, nothing failed")

# ---- the op part alone ----------------------------------------------------------------------
r = run("--group", "ops:index_copy")
out = r.stdout
check(r.returncode == 0, f"check --group ops:index_copy: exit 0 ({r.stderr.strip()[-300:]})")
check(re.search(r"^all \d+ op cases pass on every backend$", out, re.M) is not None,
      "ops:index_copy: the op part's closing line")
check("gradient" not in out, "ops:index_copy: no gradient part")

# ---- no such group --------------------------------------------------------------------------
r = run("--group", "grad:nosuch")
err = r.stderr.strip()
check(r.returncode == 2 and err == "strata: error: check: no group matches --group 'grad:nosuch'",
      f"check --group grad:nosuch: exit 2, one line ({r.returncode}, {err!r})")

finish()
