"""kjit: CUDA C++ text to cached GPU kernels, in-process.

NVRTC compiles a program to PTX and a cubin, an LMDB store keeps every artifact, and a cached
kernel reaches a fresh process in about a millisecond. No GPU is needed to compile and cache.

    import kjit
    program = kjit.Program(source, name="scale.cu", options=kjit.Options(std="c++17"),
                           name_expressions=["scale<float>"])
    binary = kjit.get(program, arch="sm_90")
    binary.cubin, binary.ptx, binary.lowered_name("scale<float>"), binary.kernel("scale<float>")

docs/python.md describes every call; kjit.interop gives cuda.core and CuPy objects.
"""

from kjit._kjit import (ArchError, Binary, BundleError, Cache, CompileError, ConfigError, CudaError,
                        Error, GlobalError, ImageError, KernelInfo, KernelParam, LaunchError, Lookup,
                        OptionError, Options, Program, StageTimings, StoreError, ToolchainError,
                        __version__, _cuda_major, compile, default_cache, get, lookup,
                        supported_archs)


def __getattr__(name):
    """kjit.interop and its two helpers, imported on first use: `import kjit` does not pay for them."""
    if name in ("interop", "cupy_module", "object_code"):
        import kjit.interop

        return kjit.interop if name == "interop" else getattr(kjit.interop, name)
    raise AttributeError(f"module 'kjit' has no attribute {name!r}")


def _toolkit_from_wheels():
    """Without a configured toolkit (KJIT_CUDA_HOME, CUDA_HOME and CUDA_PATH unset or empty), the
    CUDA of NVIDIA's wheels on sys.path (`pip install nvidia-cuda-nvrtc nvidia-nvjitlink`, headers
    from nvidia-cuda-runtime and nvidia-cuda-cccl: all in nvidia/cu<major>/, include/ and lib/) is
    kjit's toolkit, found before the one kjit was built with, as cuda.core and CuPy find them. Set
    as KJIT_CUDA_HOME, so that kjit's compile workers (child processes) use it too."""
    import os
    import sys

    if any(os.environ.get(name) for name in ("KJIT_CUDA_HOME", "CUDA_HOME", "CUDA_PATH")):
        return
    folder = f"nvidia/cu{_cuda_major}"
    nvrtc = f"{folder}/lib/libnvrtc.so.{_cuda_major}"
    for entry in sys.path:
        if entry and os.path.isfile(os.path.join(entry, nvrtc)):
            os.environ["KJIT_CUDA_HOME"] = os.path.join(os.path.abspath(entry), folder)
            return


_toolkit_from_wheels()

__all__ = [
    "ArchError", "Binary", "BundleError", "Cache", "CompileError", "ConfigError", "CudaError",
    "Error", "GlobalError", "ImageError", "KernelInfo", "KernelParam", "LaunchError", "Lookup",
    "OptionError", "Options", "Program", "StageTimings", "StoreError", "ToolchainError",
    "__version__", "compile", "cupy_module", "default_cache", "get", "lookup", "object_code",
    "supported_archs",
]
