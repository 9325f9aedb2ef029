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
