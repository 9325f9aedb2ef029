"""A Binary as a cuda.core ObjectCode and a CuPy RawModule (up to the driver where no GPU is lent)."""

import sys

import pytest

import kjit
from conftest import ARCH, saxpy_program


def test_object_code_from_cubin_maps_the_name_expressions(cache):
    pytest.importorskip("cuda.core")
    binary = cache.get(saxpy_program(name_expressions=["saxpy<float>", "saxpy<double>"]), ARCH)
    code = kjit.object_code(binary)
    assert code.code_type == "cubin"
    assert code.code == binary.cubin
    assert code.name == ARCH
    # Bytes, as cuda.core's own Program.compile keeps them: get_kernel hands them to the driver as
    # a char* (a str raised TypeError there).
    assert code.symbol_mapping == {"saxpy<float>": b"_Z5saxpyIfEvT_PKS0_PS0_i",
                                   "saxpy<double>": b"_Z5saxpyIdEvT_PKS0_PS0_i"}


def test_object_code_of_a_virtual_arch_is_ptx(cache):
    pytest.importorskip("cuda.core")
    binary = cache.get(saxpy_program(), "compute_90")
    code = kjit.object_code(binary, name="saxpy")
    assert code.code_type == "ptx"
    assert code.name == "saxpy"
    assert code.code == binary.ptx.encode()  # bytes: a str is taken for a file's path
    assert code.symbol_mapping == {k: v.encode() for k, v in binary.lowered_names.items()}


def test_without_cuda_core_the_import_error_says_what_to_install(cache, monkeypatch):
    for name in ("cuda.core", "cuda.core.experimental"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    with pytest.raises(ImportError, match="pip install cuda-core"):
        kjit.object_code(cache.get(saxpy_program(), ARCH))


def test_without_cupy_the_import_error_says_what_to_install(cache, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(ImportError, match="pip install cupy"):
        kjit.cupy_module(cache.get(saxpy_program(), ARCH))


def test_cupy_module_loads_the_cubin_file(cache):
    cupy = pytest.importorskip("cupy")
    binary = cache.get(saxpy_program(), ARCH)
    module = kjit.cupy_module(binary)
    assert isinstance(module, cupy.RawModule)
    with open(module.file_path, "rb") as cubin:  # CuPy loads it when a function is first asked for
        assert cubin.read() == binary.cubin
    assert kjit.cupy_module(binary).file_path == module.file_path  # one file per cubin


def test_cupy_module_refuses_a_ptx_only_binary(cache):
    pytest.importorskip("cupy")
    with pytest.raises(ValueError, match="no cubin"):
        kjit.cupy_module(cache.get(saxpy_program(), "compute_90"))
