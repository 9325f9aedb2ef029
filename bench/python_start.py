#!/usr/bin/env python3
"""Python warm start of kjit: `import kjit` and spawn-to-cubin for a cached kernel, each against
`python -c pass` (median of many fresh processes), and a cached lookup in-process per call.
Usage: PYTHONPATH=<build>/python bench/python_start.py [RUNS]   (docs/benchmarks.md, "Python")"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 40

SAXPY = r'''
__global__ void saxpy(float a, const float* x, float* y, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
'''
GET = ("import kjit; kjit.get(kjit.Program(%r, name='saxpy.cu', name_expressions=['saxpy']), 'sm_90').cubin"
       % SAXPY)


def spawn_ms(code, env):
    """Median wall time from spawn to exit of `python -c code`, in ms (runs interleaved by caller)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return (time.perf_counter() - start) * 1000


def main():
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, KJIT_CACHE_DIR=os.path.join(folder, "cache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run: the package's .pyc written once, then read
        subprocess.run([sys.executable, "-c", GET], env=env, check=True)  # compile and store once
        cases = {"python -c pass": "pass", "import kjit": "import kjit", "import kjit; get → cubin": GET}
        times = {name: [] for name in cases}
        for _ in range(RUNS):  # interleaved, so drift in the machine's load hits every case alike
            for name, code in cases.items():
                times[name].append(spawn_ms(code, env))
        base = statistics.median(times["python -c pass"])
        print(f"{sys.executable}, {RUNS} fresh processes each, median wall ms from spawn to exit")
        for name, samples in times.items():
            median = statistics.median(samples)
            extra = "" if name == "python -c pass" else f"  (+{median - base:.2f} ms over python -c pass)"
            print(f"  {name:28s} {median:7.2f} ms{extra}")

        import kjit
        cache = kjit.Cache(os.path.join(folder, "cache"))
        program = kjit.Program(SAXPY, name="saxpy.cu", name_expressions=["saxpy"])
        # A 4 KiB source, as the C++ figure of docs/benchmarks.md [2] ("hashed"): the difference is
        # what the binding adds.
        big = kjit.Program(SAXPY + "//" + "x" * (4096 - len(SAXPY) - 3) + "\n", name="saxpy.cu",
                           name_expressions=["saxpy"])
        cache.get(program, "sm_90")
        cache.get(big, "sm_90")
        for label, call in (("Cache.get (memory hit)", lambda: cache.get(program, "sm_90")),
                            ("Cache.lookup (memory hit)", lambda: cache.lookup(program, "sm_90")),
                            ("Cache.get, 4 KiB source", lambda: cache.get(big, "sm_90"))):
            best = float("inf")
            for _ in range(5):
                n = 20000
                start = time.perf_counter()
                for _ in range(n):
                    call()
                best = min(best, (time.perf_counter() - start) / n * 1e6)
            print(f"  in-process {label:26s} {best:6.2f} µs per call (best of 5 × 20000)")
        del cache  # closes the store before its folder is removed


if __name__ == "__main__":
    main()
