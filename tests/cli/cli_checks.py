"""The pass/fail bookkeeping of the end-to-end CLI tests (test_cli_check.py,
test_cli_info.py, test_cli_models.py): check() prints each expectation and
records the ones that fail; finish() prints the count and exits non-zero
when any failed."""
import sys

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def finish():
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)
