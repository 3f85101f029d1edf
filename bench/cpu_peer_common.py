"""What the CPU peer scripts (cpu_peer_sdpa.py, cpu_peer_attention_backward.py)
share: their command line, a Google Benchmark binary's medians at a thread
count, and the median time of a Python callable."""
import argparse
import json
import os
import subprocess
import time


def parse_args(doc):
    """binary, --threads (default: every core), --reps (default 5)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=5)
    return ap.parse_args()


def benchmark_medians(binary, bench_filter, threads, reps, min_time):
    """Runs binary's benchmarks matching bench_filter under OMP_NUM_THREADS=threads
    and yields (run_name split at "/", median real time in ms) for each."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(
        [binary, f"--benchmark_filter={bench_filter}", f"--benchmark_repetitions={reps}",
         "--benchmark_report_aggregates_only=true", f"--benchmark_min_time={min_time}",
         "--benchmark_format=json"],
        env=env, check=True, capture_output=True, text=True).stdout
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        ms = b["real_time"] * {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        yield b["run_name"].split("/"), ms


def median_ms(fn, reps, warmup=2, factor=2):
    """fn's median wall time in ms over max(reps, 5) * factor calls, after warmup calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(max(reps, 5) * factor):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] * 1e3
