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

from kjit._errors import (ArchError, BundleError, CompileError, ConfigError, CudaError, Error,
                          GlobalError, ImageError, LaunchError, OptionError, StoreError,
                          ToolchainError)
from kjit._kjit import (Binary, Cache, KernelInfo, KernelParam, Lookup, Options, Program,
                        StageTimings, __version__, compile, default_cache, get, lookup,
                        supported_archs)
from kjit.interop import cupy_module, object_code

__all__ = [
    "ArchError", "Binary", "BundleError", "Cache", "CompileError", "ConfigError", "CudaError",
    "Error", "GlobalError", "ImageError", "KernelInfo", "KernelParam", "LaunchError", "Lookup",
    "OptionError", "Options", "Program", "StageTimings", "StoreError", "ToolchainError",
    "__version__", "compile", "cupy_module", "default_cache", "get", "lookup", "object_code",
    "supported_archs",
]
