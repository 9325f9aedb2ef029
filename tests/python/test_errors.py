"""Each failure is its kjit exception class, with its details."""

import pytest

import kjit
from conftest import ARCH, saxpy_program

BROKEN = """
__global__ void broken(float* out) { out[0] = undeclared_name; }
"""


def test_compile_error_carries_the_log(cache):
    program = kjit.Program(BROKEN, name="broken.cu", options=["-DN=1"])
    with pytest.raises(kjit.CompileError) as raised:
        cache.get(program, ARCH)
    error = raised.value
    assert isinstance(error, kjit.Error)
    assert "undeclared_name" in error.log
    assert "undeclared_name" in str(error)
    assert error.program_name == "broken.cu"
    assert error.arch == ARCH
    assert "-DN=1" in error.options


def test_a_remembered_compile_error_fails_again_without_compiling(cache):
    program = kjit.Program(BROKEN, name="broken_twice.cu")
    for _ in range(2):
        with pytest.raises(kjit.CompileError):
            cache.get(program, ARCH)
    stats = cache.stats()
    assert stats["compiles"] == 1
    assert stats["failed_hits"] == 1


def test_an_option_the_compiler_refuses(cache):
    with pytest.raises(kjit.OptionError):
        cache.get(saxpy_program(options=["--no-such-option"]), ARCH)


def test_arch_is_not_an_option(cache):
    with pytest.raises(kjit.OptionError, match="arch"):
        cache.get(saxpy_program(options=["-arch=sm_80"]), ARCH)


def test_malformed_arch(cache):
    with pytest.raises(kjit.ArchError) as raised:
        cache.get(saxpy_program(), "sm_9x")
    assert isinstance(raised.value, ValueError)


def test_unsafe_cache_folder_is_a_store_error(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)  # other users could replace its entries
    with pytest.raises(kjit.StoreError):
        kjit.Cache(folder)


def test_wrong_argument_types():
    with pytest.raises(TypeError):
        kjit.get("not a program", ARCH)
    with pytest.raises(TypeError):
        kjit.lookup(42, ARCH)


def test_every_error_class_is_a_kjit_error_with_its_details_defaulted():
    value_errors = {kjit.OptionError, kjit.ArchError, kjit.ConfigError}
    details = {kjit.CompileError: {"log": "", "program_name": "", "arch": "", "options": ()},
               kjit.ToolchainError: {"status": 0}, kjit.CudaError: {"result": 0},
               kjit.LaunchError: {"kernel": "", "parameter": 0, "expected": 0, "given": 0},
               kjit.ImageError: {"name": ""}, kjit.GlobalError: {"variable": "", "expected": 0, "given": 0},
               kjit.StoreError: {"code": 0}, kjit.BundleError: {"path": ""}, kjit.ConfigError: {"variable": ""}}
    for name in ("CompileError", "OptionError", "ArchError", "ToolchainError", "CudaError", "LaunchError",
                 "ImageError", "GlobalError", "StoreError", "BundleError", "ConfigError"):
        cls = getattr(kjit, name)
        assert issubclass(cls, kjit.Error) and issubclass(cls, RuntimeError)
        assert issubclass(cls, ValueError) == (cls in value_errors)
        assert cls.__module__ == "kjit" and cls.__name__ == name and cls.__doc__
        error = cls("message")
        assert str(error) == "message"
        for detail, default in details.get(cls, {}).items():
            assert getattr(error, detail) == default


def test_an_error_made_in_python_keeps_its_details():
    error = kjit.CompileError("failed", log="line 1", arch="sm_90", options=["-std=c++17"])
    assert (str(error), error.log, error.arch, error.options) == ("failed", "line 1", "sm_90", ["-std=c++17"])
    assert kjit.CompileError.log == ""  # the class's default is untouched
    assert str(kjit.Error()) == ""
    with pytest.raises(kjit.Error):
        raise kjit.StoreError("no store", code=13)
