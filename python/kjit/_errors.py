"""kjit's exceptions: one class per C++ error type of <kjit/error.hpp>, with its details."""

__all__ = [
    "Error", "CompileError", "OptionError", "ArchError", "ToolchainError", "CudaError",
    "LaunchError", "ImageError", "GlobalError", "StoreError", "BundleError", "ConfigError",
]


class Error(RuntimeError):
    """Base of every kjit error. The message is str(error)."""

    def __init__(self, message="", **details):
        super().__init__(message)
        for name, value in details.items():
            setattr(self, name, value)


class CompileError(Error):
    """The compiler rejected the program: ``log`` is its full log, ``options`` what it was given."""

    log = ""
    program_name = ""
    arch = ""
    options = ()


class OptionError(Error, ValueError):
    """A compile option the compiler refuses, a malformed one, or one kjit reserves (-arch)."""


class ArchError(Error, ValueError):
    """An arch that does not parse ("sm_9x") or that NVRTC can't build for."""


class ToolchainError(Error):
    """NVRTC or nvJitLink missing or failing in itself; ``status`` is the library's result code."""

    status = 0


class CudaError(Error):
    """A CUDA driver call failed, or there is no driver or device; ``result`` is the CUresult."""

    result = 0


class LaunchError(Error):
    """Launch arguments that do not match the kernel's parameters."""

    kernel = ""
    parameter = 0
    expected = 0
    given = 0


class ImageError(Error):
    """A module image that is not a loadable cubin, fatbin or PTX; ``name`` names it."""

    name = ""


class GlobalError(Error):
    """A module variable read or written with a size other than its own."""

    variable = ""
    expected = 0
    given = 0


class StoreError(Error):
    """The cache folder or its LMDB store failed; ``code`` is the LMDB or errno code."""

    code = 0


class BundleError(Error):
    """A bundle file can't be read or written, or is damaged; ``path`` names it."""

    path = ""


class ConfigError(Error, ValueError):
    """A setting has a bad value; ``variable`` names the setting or KJIT_* variable."""

    variable = ""
