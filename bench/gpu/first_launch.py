#!/usr/bin/env python3
"""Time to first launch from a fresh process, kjit vs CuPy RawModule, Triton and cuda.core.

With --kjit-package, kjit's Python package too: its binary launched through CuPy (kjit.cupy_module)
and through cuda.core (kjit.object_code), what a Python user who drops kjit in gets.

Issue 15's GPU part (docs/benchmarks.md, "GPU measurements"). Each JIT gets its own empty cache
folder; one cold process fills it, then --runs warm processes each spawn, get the same saxpy kernel
(Triton: the same computation in Triton's language), launch it on 2^20 floats, synchronize and
check y = 3x + y. Reported per JIT: the cold process, and over the warm ones the p50 of
"to first launch" (from just before the spawn to the synchronize after the launch, read by the
child against the parent's CLOCK_MONOTONIC) and of the whole process (spawn to exit, teardown
included). Then kjit_bench_first_launch's per-module figures: Context::load vs the driver's
cuModuleLoadData on the same cubins.

    python3 bench/gpu/first_launch.py --kjit build/bench/kjit_bench_first_launch [--runs 10]
                                      [--kjit-package build/python]

A JIT that is not installed or fails is reported as such, with its error; the others still run.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SAXPY = r'''extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
'''
N = 1 << 20


def since_spawn_ms():
    return (time.monotonic_ns() - int(os.environ["KJIT_BENCH_T0_NS"])) / 1e6


def report(elapsed, right):
    print(f"to_first_launch_ms: {elapsed:.3f}\nright: {1 if right else 0}", flush=True)
    return 0 if right else 1


def launch_with_cupy(kernel, cp):
    x = cp.ones(N, dtype=cp.float32)
    y = cp.full(N, 2.0, dtype=cp.float32)
    kernel(((N + 255) // 256,), (256,), (cp.float32(3.0), x, y, cp.int32(N)))
    cp.cuda.runtime.deviceSynchronize()
    elapsed = since_spawn_ms()
    return report(elapsed, bool((y == 5.0).all()))


def child_cupy():
    import cupy as cp
    return launch_with_cupy(cp.RawModule(code=SAXPY).get_function("saxpy"), cp)


def kjit_binary(arch):
    """saxpy from kjit's default cache (KJIT_CACHE_DIR): the Python package, as a user drops it in."""
    import kjit
    return kjit.get(kjit.Program(SAXPY, name="saxpy.cu"), arch=arch)


def child_kjit_cupy():
    import cupy as cp
    import kjit
    binary = kjit_binary("sm_" + cp.cuda.Device().compute_capability)
    return launch_with_cupy(kjit.cupy_module(binary).get_function("saxpy"), cp)


def child_triton():
    import torch  # Triton's CUDA driver takes the device and stream from torch
    import triton
    import triton.language as tl

    @triton.jit
    def saxpy(a, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(y_ptr + offsets, a * x + y, mask=mask)

    x = torch.ones(N, dtype=torch.float32, device="cuda")
    y = torch.full((N,), 2.0, dtype=torch.float32, device="cuda")
    saxpy[((N + 1023) // 1024,)](3.0, x, y, N, BLOCK=1024)
    torch.cuda.synchronize()
    elapsed = since_spawn_ms()
    return report(elapsed, bool((y == 5.0).all().item()))


def cuda_core():
    try:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    except ImportError:
        from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
    return Device, LaunchConfig, Program, ProgramOptions, launch


def launch_with_cuda_core(device, stream, kernel):
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        from cuda import cuda as cu
    import numpy as np
    _, LaunchConfig, _, _, launch = cuda_core()

    x = device.allocate(N * 4, stream=stream)
    y = device.allocate(N * 4, stream=stream)
    cu.cuMemsetD32Async(int(x.handle), 0x3F800000, N, int(stream.handle))  # 1.0f
    cu.cuMemsetD32Async(int(y.handle), 0x40000000, N, int(stream.handle))  # 2.0f
    config = LaunchConfig(grid=(N + 255) // 256, block=256)
    launch(stream, config, kernel, np.float32(3.0), int(x.handle), int(y.handle), np.int32(N))
    stream.sync()
    elapsed = since_spawn_ms()
    host = np.empty(N, dtype=np.float32)
    cu.cuMemcpyDtoH(host.ctypes.data, int(y.handle), N * 4)
    return report(elapsed, bool((host == 5.0).all()))


def child_cuda_core():
    Device, _, Program, ProgramOptions, _ = cuda_core()
    device = Device()
    device.set_current()
    stream = device.create_stream()
    major, minor = device.compute_capability
    program = Program(SAXPY, code_type="c++", options=ProgramOptions(arch=f"sm_{major}{minor}"))
    cache = None
    try:
        from cuda.core.utils import FileStreamProgramCache
        cache = FileStreamProgramCache(os.environ["KJIT_BENCH_CACHE"])
    except ImportError:
        print("cache: none (this cuda.core has no FileStreamProgramCache; every process compiles)")
    code = program.compile("cubin", cache=cache) if cache is not None else program.compile("cubin")
    return launch_with_cuda_core(device, stream, code.get_kernel("saxpy"))


def child_kjit_cuda_core():
    import kjit
    Device = cuda_core()[0]
    device = Device()
    device.set_current()
    stream = device.create_stream()
    major, minor = device.compute_capability
    kernel = kjit.object_code(kjit_binary(f"sm_{major}{minor}")).get_kernel("saxpy")
    return launch_with_cuda_core(device, stream, kernel)


CHILDREN = {"cupy": child_cupy, "triton": child_triton, "cuda.core": child_cuda_core,
            "kjit+cupy": child_kjit_cupy, "kjit+cuda.core": child_kjit_cuda_core}


def fields(text):
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            out[key.strip()] = value.strip()
    return out


def spawn(command, env):
    env = dict(env, KJIT_BENCH_T0_NS=str(time.monotonic_ns()))
    start = time.monotonic_ns()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = (time.monotonic_ns() - start) / 1e6
    return done, wall


def contender(name, command, env, runs):
    """Cold once, then `runs` warm processes; a row of the table, or the error."""
    cold, cold_wall = spawn(command, env)
    if cold.returncode != 0:
        tail = (cold.stderr or cold.stdout).strip().splitlines()[-3:]
        return {"name": name, "error": f"exit {cold.returncode}: " + " | ".join(tail)}
    firsts, walls, rights = [], [], []
    for _ in range(runs):
        done, wall = spawn(command, env)
        values = fields(done.stdout)
        if done.returncode != 0 or "to_first_launch_ms" not in values:
            return {"name": name, "error": f"warm run exit {done.returncode}: {done.stderr.strip()[-300:]}"}
        firsts.append(float(values["to_first_launch_ms"]))
        walls.append(wall)
        rights.append(values.get("right") == "1")
    return {"name": name, "cold_ms": float(fields(cold.stdout)["to_first_launch_ms"]),
            "cold_wall_ms": cold_wall, "first_p50": statistics.median(firsts),
            "first_min": min(firsts), "wall_p50": statistics.median(walls), "right": all(rights),
            "notes": [line for line in cold.stdout.splitlines() if line.startswith("cache:")]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kjit", help="kjit_bench_first_launch (built by meson in bench/)")
    parser.add_argument("--runs", type=int, default=10, help="warm processes per JIT (default 10)")
    parser.add_argument("--modules", type=int, default=100, help="kernels of the per-module figures")
    parser.add_argument("--only", default="kjit,cupy,triton,cuda.core", help="comma-separated JITs "
                        "(kjit+cupy and kjit+cuda.core: the Python package's binary launched through each)")
    parser.add_argument("--kjit-package", help="a folder holding the Python package kjit/: adds "
                        "kjit+cupy and kjit+cuda.core to --only")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return CHILDREN[args.child]()
    if args.runs < 1 or args.modules < 1:
        parser.error("--runs and --modules must be at least 1")
    wanted = args.only.split(",")
    if args.kjit_package:
        wanted += [name for name in ("kjit+cupy", "kjit+cuda.core") if name not in wanted]
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [args.kjit_package, os.environ.get("PYTHONPATH")]))
    if "kjit" in wanted and not args.kjit:
        parser.error("--kjit PATH is needed to measure kjit")

    root = tempfile.mkdtemp(prefix="kjit-first-launch-")
    rows = []
    for name in wanted:
        folder = os.path.join(root, name)
        os.makedirs(folder)
        env = dict(os.environ, KJIT_CACHE_DIR=folder, CUPY_CACHE_DIR=folder, TRITON_CACHE_DIR=folder,
                   KJIT_BENCH_CACHE=folder)
        if name == "kjit":
            command = [args.kjit, "launch"]
        elif name in CHILDREN:
            command = [sys.executable, os.path.abspath(__file__), "--child", name]
        else:
            parser.error(f"unknown JIT {name!r}")
        rows.append(contender(name, command, env, args.runs))

    print(f"time to first launch, fresh process, warm cache: saxpy on {N} floats, {args.runs} warm runs each")
    print(f"{'JIT':<15} {'cold ms':>9} {'warm p50 ms':>12} {'warm min ms':>12} {'process p50 ms':>15} "
          f"{'vs kjit':>8}  result")
    base = next((row["first_p50"] for row in rows if row["name"] == "kjit" and "error" not in row), None)
    for row in rows:
        if "error" in row:
            print(f"{row['name']:<15} failed: {row['error']}")
            continue
        ratio = f"{row['first_p50'] / base:.1f}x" if base else "-"
        print(f"{row['name']:<15} {row['cold_ms']:>9.1f} {row['first_p50']:>12.2f} {row['first_min']:>12.2f} "
              f"{row['wall_p50']:>15.1f} {ratio:>8}  {'right' if row['right'] else 'WRONG'}"
              + "".join(f"  ({note})" for note in row["notes"]))

    if "kjit" in wanted:
        env = dict(os.environ, KJIT_CACHE_DIR=os.path.join(root, "modules"))
        fill, _ = spawn([args.kjit, "modules", str(args.modules)], env)
        done, _ = spawn([args.kjit, "modules", str(args.modules)], env)
        print(f"\nper module, {args.modules} distinct cached kernels loaded in one process:")
        if fill.returncode != 0 or done.returncode != 0:
            print(f"  failed: {(fill.stderr + fill.stdout + done.stderr + done.stdout).strip()[-300:]}")
        else:
            for key, value in fields(done.stdout).items():
                print(f"  {key:<28} {value}")
    failed = any("error" in row or not row["right"] for row in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
