#!/usr/bin/env python3
"""Python warm start side by side: a cached saxpy from spawn to cubin bytes through kjit, cuda.core's
FileStreamProgramCache, CuPy's kernel cache and Triton's cache, each against `python -c pass`.

Each peer has a cache folder of its own, filled by one process first ("cold": it compiles and
stores); then RUNS rounds of fresh processes, interleaved (the order rotated each round): the median
and the minimum of the wall time from spawn to exit, and the median CPU time (user + system, less
sensitive to a loaded machine's waits). Each peer's imports alone are a row of their own, to show
where its time goes. No GPU is used: every peer runs compile-only for sm_90 (what each child calls
is written beside it below). The ratios divide each peer's time over `python -c pass` by kjit's.
Usage: bench/python_peers.sh VENV_DIR [RUNS]   (makes the venv, installs the peers from PyPI)
   or: PYTHONPATH=<build>/python VENV_DIR/bin/python bench/python_peers.py [RUNS]
(docs/benchmarks.md, "Python, side by side")"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 30

# The same kernel for kjit, cuda.core and CuPy; extern "C" because cuda.core refuses name
# expressions together with its cache (their mapping is not stored).
SAXPY = r'''extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
'''
ELF = "assert cubin[:4] == b'\\x7fELF', cubin[:4]"

KJIT = f"""import kjit
cubin = kjit.get(kjit.Program({SAXPY!r}, name='saxpy.cu'), 'sm_90').cubin
{ELF}"""

KJIT_SOURCE = f"import kjit; print(kjit.lookup(kjit.Program({SAXPY!r}, name='saxpy.cu'), 'sm_90').source)"

# cuda.core: Program.compile's cache= argument, the documented way to use the persistent cache
# (its folder from a variable of this benchmark's: cuda.core reads none).
CUDA_CORE_IMPORT = ("from cuda.core import Program, ProgramOptions\n"
                    "from cuda.core.utils import FileStreamProgramCache")
CUDA_CORE = f"""import os
{CUDA_CORE_IMPORT}
cache = FileStreamProgramCache(os.environ['CUDA_CORE_BENCH_CACHE'])
program = Program({SAXPY!r}, code_type='c++', options=ProgramOptions(arch='sm_90'))
cubin = program.compile('cubin', cache=cache).code
{ELF}"""

# CuPy: the call RawModule makes (cupy._core.core.compile_with_cache, prepend_cupy_headers=False;
# its disk cache in CUPY_CACHE_DIR), with the arch given instead of read from the device. Two
# device calls are replaced by what they would give without one: the arch options' memoizer keys
# on the current device (cudaGetDevice), so its undecorated function is used; and Module.load
# (cuModuleLoadData) keeps the cubin's bytes instead of loading them.
CUPY_IMPORT = "import cupy\nfrom cupy._core import core\nfrom cupy.cuda import compiler, function"
CUPY = f"""{CUPY_IMPORT}
class Module(function.Module):
    def load(self, cubin):
        self.cubin = bytes(cubin)
class NoDevice:
    Module = Module
compiler.function = NoDevice
compiler._get_arch_for_options_for_nvrtc = compiler._get_arch_for_options_for_nvrtc.__wrapped__
cubin = core.compile_with_cache({SAXPY!r}, (), '90', prepend_cupy_headers=False).cubin
{ELF}"""

# Triton: the same computation in Triton's language, triton.compile for an explicit target (no
# driver asked), its cache in TRITON_CACHE_DIR. A file, not -c: triton.jit reads the function's
# source with inspect.
TRITON_IMPORT = ("import triton\nimport triton.language as tl\n"
                 "from triton.backends.compiler import GPUTarget\nfrom triton.compiler import ASTSource")
TRITON = f"""{TRITON_IMPORT}

@triton.jit
def saxpy(a, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, a * x + y, mask=mask)

source = ASTSource(fn=saxpy, signature={{"a": "fp32", "x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32",
                                         "BLOCK": "constexpr"}}, constexprs={{"BLOCK": 1024}})
cubin = triton.compile(source, target=GPUTarget("cuda", 90, 32)).asm["cubin"]
{ELF}
"""

VERSIONS = r"""import importlib.metadata as m, os
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return None
import kjit
print('kjit', kjit.__version__, '(NVRTC of', os.environ.get('KJIT_CUDA_HOME') or os.environ.get('CUDA_HOME')
      or 'the toolkit it was built with', end=')\n')
try:
    from cuda.bindings import nvrtc
    _, major, minor = nvrtc.nvrtcVersion()
    print('cuda-core', version('cuda-core'), '+ cuda-bindings', version('cuda-bindings'),
          f'(NVRTC {major}.{minor})')
except Exception as e:
    print('cuda-core:', type(e).__name__, e)
try:
    from cupy.cuda import compiler
    print('cupy-cuda13x', version('cupy-cuda13x'), '(NVRTC %d.%d)' % compiler._get_nvrtc_version())
except Exception as e:
    print('cupy:', type(e).__name__, e)
print('triton', version('triton'))
"""


def spawn(command, env):
    """(wall, CPU) ms of one fresh process from spawn to exit; CPU is user + system time, its own
    and its children's (the rusage of children waited for). Its error ends the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:2])}… exited {done.returncode}:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu


def snapshot(folder):
    """(path, size, mtime) of every file under folder: a timed run that compiled would change it.
    Not for kjit, whose hits write its usage log and LMDB's reader table: a lookup says instead."""
    out = set()
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            stat = os.stat(path)
            out.add((os.path.relpath(path, folder), stat.st_size, stat.st_mtime_ns))
    return out


def main():
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="kjit-python-peers-") as root:
        folders = {name: os.path.join(root, name) for name in ("kjit", "cuda.core", "cupy", "triton")}
        peers = ("cuda.core", "cupy", "triton")
        for folder in folders.values():
            os.makedirs(folder)
        triton_file = os.path.join(root, "saxpy_triton.py")
        with open(triton_file, "w") as out:
            out.write(TRITON)
        env = dict(os.environ, KJIT_CACHE_DIR=folders["kjit"], CUPY_CACHE_DIR=folders["cupy"],
                   TRITON_CACHE_DIR=folders["triton"], CUDA_CORE_BENCH_CACHE=folders["cuda.core"],
                   TRITON_DEFAULT_FP_FUSION="1")  # Triton 3.9's default, set to silence its warning
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run: .pyc written once, then read

        # (peer, label, command); a peer's "import" row is its imports alone, to show where time goes.
        cases = [
            ("python", "python -c pass", [python, "-c", "pass"]),
            ("kjit", "import kjit", [python, "-c", "import kjit"]),
            ("kjit", "spawn → cubin", [python, "-c", KJIT]),
            ("cuda.core", "import", [python, "-c", CUDA_CORE_IMPORT]),
            ("cuda.core", "spawn → cubin", [python, "-c", CUDA_CORE]),
            ("cupy", "import", [python, "-c", CUPY_IMPORT]),
            ("cupy", "spawn → cubin", [python, "-c", CUPY]),
            ("triton", "import", [python, "-c", TRITON_IMPORT]),
            ("triton", "spawn → cubin", [python, triton_file]),
        ]
        versions = subprocess.run([python, "-c", VERSIONS], env=env, capture_output=True, text=True)
        warm = {}
        for peer, label, command in cases:  # the cold process of each fills its cache (and .pyc)
            if label == "spawn → cubin":
                warm[peer] = spawn(command, env)[0]
        before = {peer: snapshot(folders[peer]) for peer in peers}
        load = os.getloadavg()[0]

        times = {(peer, label): [] for peer, label, _ in cases}
        for round_ in range(RUNS):  # interleaved, rotated: drift in the load hits every case alike
            shift = round_ % len(cases)
            for peer, label, command in cases[shift:] + cases[:shift]:
                times[(peer, label)].append(spawn(command, env))

        changed = {peer: sorted({entry[0] for entry in before[peer] ^ snapshot(folders[peer])})
                   for peer in peers}
        kjit_source = subprocess.run([python, "-c", KJIT_SOURCE], env=env, capture_output=True,
                                     text=True).stdout.strip()

    def stat(case, pick, reduce=statistics.median):
        return reduce(sample[pick] for sample in times[case])

    pass_case, kjit_case = ("python", "python -c pass"), ("kjit", "spawn → cubin")
    rows = {case: {"median": stat(case, 0), "min": stat(case, 0, min), "cpu": stat(case, 1)}
            for case in times}
    base = rows[pass_case]
    print(f"{python} (Python {sys.version.split()[0]}), {RUNS} fresh processes per row, interleaved;")
    print(f"wall and CPU (user + system) ms from spawn to exit; {os.cpu_count()} cores, load "
          f"{load:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    print((versions.stdout + versions.stderr[-500:]).rstrip())
    print()
    print(f"{'peer':<10} {'measure':<14} {'median':>8} {'over pass':>10} {'min':>8} {'over pass':>10} "
          f"{'CPU':>8} {'over pass':>10} {'cold':>6}")
    for case, row in rows.items():
        over = {what: row[what] - base[what] for what in row}
        overs = ["" if case == pass_case else f"+{over[what]:.2f}" for what in ("median", "min", "cpu")]
        print(f"{case[0]:<10} {case[1]:<14} {row['median']:>8.2f} {overs[0]:>10} {row['min']:>8.2f} "
              f"{overs[1]:>10} {row['cpu']:>8.2f} {overs[2]:>10} "
              f"{f'{warm[case[0]]:.0f}' if case[1] == 'spawn → cubin' else '':>6}")
    print()
    print("spawn → cubin, times kjit's:  over pass (median)  over pass (min)  over pass (CPU)  "
          "total (median)")
    for case, row in rows.items():
        if case[1] != "spawn → cubin":
            continue
        ratios = [(row[what] - base[what]) / (rows[kjit_case][what] - base[what])
                  for what in ("median", "min", "cpu")]
        print(f"{case[0]:<30} {ratios[0]:>18.0f}× {ratios[1]:>15.0f}× {ratios[2]:>15.0f}× "
              f"{row['median'] / rows[kjit_case]['median']:>14.1f}×")
    print()
    print(f"kjit after the timed runs: the same lookup is served from {kjit_source or '(failed)'}")
    for peer, paths in changed.items():
        print(f"{peer} cache folder after the timed runs: "
              + ("unchanged (every run a hit)" if not paths else "changed: " + ", ".join(paths)))


if __name__ == "__main__":
    main()
