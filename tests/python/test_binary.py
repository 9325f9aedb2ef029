"""A Binary's fields and its kernels' resources, read from the cubin without a GPU."""

import pytest

import kjit
from conftest import ARCH, REVERSE, saxpy_program


@pytest.fixture
def saxpy(cache):
    return cache.get(saxpy_program(name_expressions=["saxpy<float>", "saxpy<double>"]), ARCH)


def test_cubin_and_ptx(saxpy):
    assert saxpy.arch == ARCH
    assert isinstance(saxpy.cubin, bytes)
    assert saxpy.cubin[:4] == b"\x7fELF"
    assert isinstance(saxpy.ptx, str)
    assert ".target sm_90" in saxpy.ptx
    assert saxpy.cubin_path == "nvrtc"
    assert saxpy.timings.total_ms > 0


def test_lowered_names(saxpy):
    assert saxpy.lowered_names == {"saxpy<float>": "_Z5saxpyIfEvT_PKS0_PS0_i",
                                   "saxpy<double>": "_Z5saxpyIdEvT_PKS0_PS0_i"}
    assert saxpy.lowered_name("saxpy<float>") == "_Z5saxpyIfEvT_PKS0_PS0_i"
    with pytest.raises(KeyError, match="saxpy<int>"):
        saxpy.lowered_name("saxpy<int>")


def test_kernel_resources_and_parameter_layout(saxpy):
    assert sorted(k.name for k in saxpy.kernels) == sorted(saxpy.lowered_names.values())
    kernel = saxpy.kernel("saxpy<float>")
    assert kernel.name == "_Z5saxpyIfEvT_PKS0_PS0_i"
    assert 0 < kernel.registers <= 255
    assert [(p.index, p.offset, p.size) for p in kernel.params] == [(0, 0, 4), (1, 8, 8), (2, 16, 8), (3, 24, 4)]
    assert kernel.param_bytes == 28
    double = saxpy.kernel("saxpy<double>")
    assert [p.size for p in double.params] == [8, 8, 8, 4]
    assert saxpy.kernel("no_such_kernel") is None


def test_static_shared_memory(cache):
    binary = cache.get(kjit.Program(REVERSE, name="reverse.cu", options=kjit.Options(defines={"TILE": 256})), ARCH)
    assert binary.kernel("reverse").static_shared_bytes == 256 * 4
    smaller = cache.get(kjit.Program(REVERSE, name="reverse.cu", options=kjit.Options(defines={"TILE": 64})), ARCH)
    assert smaller.kernel("reverse").static_shared_bytes == 64 * 4


def test_virtual_arch_is_ptx_only(cache):
    binary = cache.get(saxpy_program(), "compute_90")
    assert binary.cubin == b""
    assert ".entry _Z5saxpyIfEvT_PKS0_PS0_i" in binary.ptx
    assert binary.kernels == []


def test_binary_is_shared_not_copied(cache):
    binary = cache.get(saxpy_program(), ARCH)
    assert binary.cubin is binary.cubin  # made once per Binary
