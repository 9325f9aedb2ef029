"""kjit.Program and kjit.Options: what they hold and what they refuse."""

import pathlib

import pytest

import kjit
from conftest import SAXPY, saxpy_program


def test_program_holds_its_parts():
    program = kjit.Program(SAXPY, name="saxpy.cu", options=["-DN=4", kjit.Options(std="c++17")],
                           name_expressions=["saxpy<float>", "saxpy<double>"],
                           headers={"params.h": "#define P 1\n"})
    assert program.name == "saxpy.cu"
    assert program.source == SAXPY
    assert program.options == ["-DN=4", "--std=c++17"]
    assert program.name_expressions == ["saxpy<float>", "saxpy<double>"]
    assert program.headers == {"params.h": "#define P 1\n"}
    assert "saxpy.cu" in repr(program)


def test_program_is_immutable():
    program = saxpy_program()
    with pytest.raises(AttributeError):
        program.source = "changed"


def test_options_render_in_a_fixed_order(tmp_path):
    options = kjit.Options(std="c++17", defines={"N": 4, "FAST": None, "ON": True},
                           include_dirs=[tmp_path, "include"], max_registers=32, line_info=True,
                           extra=["--extra-device-vectorization"])
    assert options.render() == [
        "--std=c++17", "-DN=4", "-DFAST", "-DON=1", f"-I{tmp_path}", "-Iinclude",
        "--maxrregcount=32", "-lineinfo", "--extra-device-vectorization"]
    assert options.defines == {"N": "4", "FAST": "", "ON": "1"}
    assert options.std == "c++17"
    assert options.max_registers == 32


def test_options_refuse_a_malformed_define_name():
    with pytest.raises(kjit.OptionError) as raised:
        kjit.Options(defines={"not an identifier": 1})
    assert isinstance(raised.value, kjit.Error)
    assert isinstance(raised.value, ValueError)


def test_a_single_string_where_a_list_is_expected_is_refused():
    with pytest.raises(TypeError):
        kjit.Program(SAXPY, name_expressions="saxpy<float>")
    with pytest.raises(TypeError):
        kjit.Options(include_dirs="include")
    with pytest.raises(TypeError):
        kjit.Program(SAXPY, options="-DN=4")


def test_program_from_file_is_named_by_its_path(tmp_path):
    path = tmp_path / "saxpy.cu"
    path.write_text(SAXPY)
    program = kjit.Program.from_file(path, name_expressions=["saxpy<float>"])
    assert program.name == str(path)
    assert program.source == SAXPY
    with pytest.raises(kjit.Error):
        kjit.Program.from_file(pathlib.Path(tmp_path / "missing.cu"))
