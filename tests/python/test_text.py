"""Text kjit hands out that is not UTF-8 (a Latin-1 comment NVRTC echoes, a source read from a
file) reaches Python with U+FFFD for the bytes that are not: a CompileError stays a CompileError
(it became a RuntimeError from a UnicodeDecodeError inside the exception translator)."""

import pytest

import kjit
from conftest import ARCH


def test_a_compile_error_with_latin1_text_is_a_compile_error(cache, tmp_path):
    path = tmp_path / "latin1_error.cu"
    path.write_bytes(b'#error caf\xe9\nextern "C" __global__ void k(int* p) { p[0] = 1; }\n')
    program = kjit.Program.from_file(str(path))
    assert "caf\ufffd" in program.source
    with pytest.raises(kjit.CompileError) as raised:
        cache.get(program, ARCH)
    assert "caf\ufffd" in raised.value.log


def test_a_warning_with_latin1_text_is_a_readable_log(cache, tmp_path):
    path = tmp_path / "latin1_warning.cu"
    path.write_bytes(b'#warning caf\xe9\nextern "C" __global__ void k(int* p) { p[0] = 2; }\n')
    binary = cache.get(kjit.Program.from_file(str(path)), ARCH)
    assert "caf\ufffd" in binary.log
