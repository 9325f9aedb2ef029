"""On a machine with a GPU: kernels kjit compiled and cached launch through cuda.core, CuPy and
PyTorch (kjit.object_code, kjit.cupy_module), and through the C API called from Python, each
result checked against the host's. tools/gpu-run runs it after building the kjit module for the
machine's Python (tools/gpu-build-python).

    python3 tests/gpu/python_launch.py --kjit-lib gpu-pack/lib/libkjit.so.0.1 [--package DIR]

--package: a folder holding the built package kjit/ (else kjit.interop is imported from
python/kjit/interop.py and the binaries come from the C API through ctypes, which gives the same
cubin, PTX and lowered names). Exit 0: every check passed; 1: one failed, or CuPy, PyTorch or
cuda.core is missing; 77: no GPU.
"""

import argparse
import ctypes
import importlib.util
import os
import sys
import tempfile
import traceback

SAXPY = r"""
template <typename T>
__global__ void saxpy(T a, const T* x, T* y, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""
EXPRESSION = "saxpy<float>"
N = 1 << 20
A = 2.5


class CApi:
    """libkjit's C API (include/kjit/kjit.h) through ctypes: compile, look up, load, launch."""

    class LaunchConfig(ctypes.Structure):
        _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                    ("shared_bytes", ctypes.c_uint), ("stream", ctypes.c_void_p)]

    class LookupInfo(ctypes.Structure):
        _fields_ = [("source", ctypes.c_int), ("lookup_ms", ctypes.c_double), ("key", ctypes.c_char * 65)]

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.kjit_last_error_message.restype = ctypes.c_char_p
        self.lib.kjit_source_name.restype = ctypes.c_char_p
        self.lib.kjit_binary_arch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]

    def check(self, status, call):
        if status != 0:
            raise RuntimeError(f"{call}: {self.lib.kjit_last_error_message().decode()}")

    def call(self, name, *arguments):
        self.check(getattr(self.lib, name)(*arguments), name)

    def cache(self, folder):
        config = ctypes.c_void_p()
        self.call("kjit_config_create", ctypes.byref(config))
        self.call("kjit_config_set", config, b"cache_dir", folder.encode())
        cache = ctypes.c_void_p()
        self.call("kjit_cache_create", config, ctypes.byref(cache))
        self.lib.kjit_config_destroy(config)
        return cache

    def program(self):
        program = ctypes.c_void_p()
        self.call("kjit_program_create", b"saxpy.cu", SAXPY.encode(), ctypes.byref(program))
        self.call("kjit_program_add_name_expression", program, EXPRESSION.encode())
        return program

    def lookup(self, cache, program, arch):
        binary = ctypes.c_void_p()
        info = CApi.LookupInfo()
        self.call("kjit_cache_lookup", cache, program, arch.encode(), ctypes.byref(binary), ctypes.byref(info))
        return binary, self.lib.kjit_source_name(info.source).decode()


class CApiBinary:
    """What kjit.interop reads of a kjit.Binary (arch, cubin, ptx, lowered_names), from the C API."""

    def __init__(self, api, binary):
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        api.call("kjit_binary_cubin", binary, ctypes.byref(data), ctypes.byref(size))
        self.cubin = ctypes.string_at(data, size.value) if size.value else b""
        text = ctypes.c_char_p()
        api.call("kjit_binary_ptx", binary, ctypes.byref(text), ctypes.byref(size))
        self.ptx = ctypes.string_at(text, size.value).decode()
        arch = ctypes.c_char_p()
        api.call("kjit_binary_arch", binary, ctypes.byref(arch))
        self.arch = arch.value.decode()
        lowered = ctypes.c_char_p()
        api.call("kjit_binary_lowered_name", binary, EXPRESSION.encode(), ctypes.byref(lowered))
        self.lowered_names = {EXPRESSION: lowered.value.decode()}

    def lowered_name(self, expression):
        return self.lowered_names[expression]


def expected(x, y):
    return (A * x + y).astype(x.dtype)


def check_result(what, got, want):
    import numpy

    if not numpy.allclose(got, want, rtol=1e-6, atol=1e-6):
        bad = int(numpy.count_nonzero(~numpy.isclose(got, want, rtol=1e-6, atol=1e-6)))
        raise AssertionError(f"{what}: {bad} of {len(want)} values wrong")
    print(f"  {what}: {len(want)} values right")


def launch_cuda_core(interop, binary):
    import cupy
    import numpy
    from cuda.core import Device, LaunchConfig, launch

    device = Device()
    device.set_current()
    stream = device.create_stream()
    code = interop.object_code(binary)
    kernel = code.get_kernel(EXPRESSION)  # through the name expressions' mapping
    x = cupy.random.rand(N, dtype=cupy.float32)
    y = cupy.random.rand(N, dtype=cupy.float32)
    want = expected(x.get(), y.get())
    cupy.cuda.Device().synchronize()
    config = LaunchConfig(grid=(N + 255) // 256, block=256)
    launch(stream, config, kernel, numpy.float32(A), numpy.uint64(x.data.ptr), numpy.uint64(y.data.ptr),
           numpy.int32(N))
    stream.sync()
    check_result("cuda.core ObjectCode, CuPy arrays", y.get(), want)

    import torch

    tx = torch.rand(N, device="cuda", dtype=torch.float32)
    ty = torch.rand(N, device="cuda", dtype=torch.float32)
    want = expected(tx.cpu().numpy(), ty.cpu().numpy())
    torch.cuda.synchronize()
    launch(stream, config, kernel, numpy.float32(A), numpy.uint64(tx.data_ptr()), numpy.uint64(ty.data_ptr()),
           numpy.int32(N))
    stream.sync()
    check_result("cuda.core ObjectCode, PyTorch tensors", ty.cpu().numpy(), want)


def launch_cupy(interop, binary):
    import cupy
    import numpy
    import torch

    module = interop.cupy_module(binary)
    function = module.get_function(binary.lowered_name(EXPRESSION))
    x = cupy.random.rand(N, dtype=cupy.float32)
    y = cupy.random.rand(N, dtype=cupy.float32)
    want = expected(x.get(), y.get())
    function(((N + 255) // 256,), (256,), (numpy.float32(A), x, y, numpy.int32(N)))
    check_result("CuPy RawModule, CuPy arrays", y.get(), want)

    tx = torch.rand(N, device="cuda", dtype=torch.float32)
    ty = torch.rand(N, device="cuda", dtype=torch.float32)
    want = expected(tx.cpu().numpy(), ty.cpu().numpy())
    torch.cuda.synchronize()
    # PyTorch tensors as CuPy arrays without a copy (__cuda_array_interface__).
    function(((N + 255) // 256,), (256,), (numpy.float32(A), cupy.asarray(tx), cupy.asarray(ty), numpy.int32(N)))
    cupy.cuda.Device().synchronize()
    check_result("CuPy RawModule, PyTorch tensors", ty.cpu().numpy(), want)


def launch_c_api(api, binary_handle):
    import cupy

    module = ctypes.c_void_p()
    api.call("kjit_module_load", binary_handle, 0, ctypes.byref(module))
    kernel = ctypes.c_void_p()
    api.call("kjit_module_kernel", module, EXPRESSION.encode(), ctypes.byref(kernel))
    x = cupy.random.rand(N, dtype=cupy.float32)
    y = cupy.random.rand(N, dtype=cupy.float32)
    want = expected(x.get(), y.get())
    cupy.cuda.Device().synchronize()
    a, px, py, n = ctypes.c_float(A), ctypes.c_uint64(x.data.ptr), ctypes.c_uint64(y.data.ptr), ctypes.c_int(N)
    arguments = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in (a, px, py, n)])
    config = CApi.LaunchConfig((((N + 255) // 256), 1, 1), (256, 1, 1), 0, None)
    api.call("kjit_kernel_launch", kernel, ctypes.byref(config), arguments, ctypes.c_size_t(4))
    # A wrong argument count is refused before the driver.
    status = api.lib.kjit_kernel_launch(kernel, ctypes.byref(config), arguments, ctypes.c_size_t(3))
    if status == 0:
        raise AssertionError("kjit_kernel_launch took 3 arguments for a kernel of 4")
    api.call("kjit_module_synchronize", module)
    check_result("C API kjit_kernel_launch, CuPy arrays", y.get(), want)
    api.lib.kjit_kernel_destroy(kernel)
    api.lib.kjit_module_destroy(module)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kjit-lib", required=True)
    parser.add_argument("--package")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    try:
        import cupy
        import torch  # noqa: F401
        from cuda.core import Device  # noqa: F401
    except ImportError as error:  # a GPU machine without them checks nothing: a failure, not a skip
        print(f"cannot check the launches: {error}")
        return 1
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no device")
        major, minor = divmod(int(cupy.cuda.Device(0).compute_capability), 10)
        args.arch = f"sm_{major}{minor}"
    except Exception as error:  # noqa: BLE001: any failure to see a device is "no GPU"
        print(f"no GPU: {error}")
        return 77

    api = CApi(args.kjit_lib)
    folder = tempfile.mkdtemp(prefix="kjit-python-launch-")
    cache = api.cache(os.path.join(folder, "cache"))
    program = api.program()
    handle, source = api.lookup(cache, program, args.arch)
    print(f"C API: {args.arch} binary {source}")
    binaries = [("C API binary", CApiBinary(api, handle))]

    if args.package:
        sys.path.insert(0, args.package)
    try:
        import kjit
        import kjit.interop as interop

        python_cache = kjit.Cache(os.path.join(folder, "python-cache"))
        python_program = kjit.Program(SAXPY, name="saxpy.cu", name_expressions=[EXPRESSION])
        first = python_cache.lookup(python_program, arch=args.arch)
        again = kjit.Cache(os.path.join(folder, "python-cache")).lookup(python_program, arch=args.arch)
        print(f"kjit package {kjit.__version__} from {os.path.dirname(kjit.__file__)}: "
              f"{first.source} then {again.source}")
        binaries.insert(0, ("kjit.Binary (disk hit)", again.binary))
    except ImportError as error:
        print(f"kjit package not importable ({error}): kjit.interop from python/kjit/interop.py, "
              "binaries from the C API")
        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_file_location(
            "kjit_interop", os.path.join(here, "..", "..", "python", "kjit", "interop.py"))
        interop = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(interop)

    failures = 0
    checks = [(f"{label}: {name}", run, binary) for label, binary in binaries
              for name, run in (("cuda.core", launch_cuda_core), ("CuPy", launch_cupy))]
    for what, run, binary in checks:
        print(what)
        try:
            run(interop, binary)
        except Exception:  # noqa: BLE001: report each check and go on
            failures += 1
            traceback.print_exc()
    print("C API from Python")
    try:
        launch_c_api(api, handle)
    except Exception:  # noqa: BLE001
        failures += 1
        traceback.print_exc()
    api.lib.kjit_binary_destroy(handle)
    api.lib.kjit_program_destroy(program)
    api.lib.kjit_cache_destroy(cache)
    print(f"{failures} check(s) failed" if failures else "every check passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
