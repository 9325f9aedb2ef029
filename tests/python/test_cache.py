"""Compiling and caching: memory, then disk from a second Cache and a second process; keys, stats."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

import kjit
from conftest import ARCH, fresh_program, saxpy_program


def test_compile_then_memory_hit(cache):
    program = fresh_program()
    first = cache.lookup(program, ARCH)
    assert first.source == "compiled"
    second = cache.lookup(program, ARCH)
    assert second.source == "memory"
    assert second.binary.cubin == first.binary.cubin
    stats = cache.stats()
    assert stats["compiles"] == 1
    assert stats["memory_hits"] == 1
    assert stats["misses"] == 1


def test_second_cache_reads_the_disk(cache_dir):
    program = fresh_program()
    compiled = kjit.Cache(cache_dir).lookup(program, ARCH)
    again = kjit.Cache(cache_dir).lookup(program, ARCH)
    assert again.source == "disk"
    assert again.binary.cubin == compiled.binary.cubin
    assert again.key == compiled.key


def test_second_process_reads_the_disk(cache_dir):
    program = fresh_program()
    compiled = kjit.Cache(cache_dir).lookup(program, ARCH)
    script = textwrap.dedent(f"""
        import kjit
        program = kjit.Program({program.source!r}, name={program.name!r}, options={program.options!r},
                               name_expressions={program.name_expressions!r})
        found = kjit.Cache({str(cache_dir)!r}).lookup(program, {ARCH!r})
        print(found.source, found.key, len(found.binary.cubin))
    """)
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))).stdout.split()
    assert out == ["disk", compiled.key, str(len(compiled.binary.cubin))]


def test_key_names_the_mirror_folder(cache_dir):
    cache = kjit.Cache(cache_dir)
    program = fresh_program()
    found = cache.lookup(program, ARCH)
    assert re.fullmatch(r"[0-9a-f]{64}", found.key)
    assert cache.key(program, ARCH) == found.key
    cache.flush_mirror()
    module = cache_dir / "programs" / found.key / "module"
    assert (module / f"kernel.{ARCH}.cubin").read_bytes() == found.binary.cubin


def test_key_of_a_memory_hit_by_raw_inputs(cache):
    program = fresh_program()
    compiled = cache.lookup(program, ARCH)
    hit = cache.lookup(program, ARCH)
    assert hit.source == "memory"
    assert hit.key == compiled.key


def test_settings_are_keyword_arguments(cache_dir):
    cache = kjit.Cache(cache_dir, mirror=False, memory_limit="64MiB", arch=ARCH, max_size=1 << 30)
    assert cache.cache_dir == str(cache_dir)
    binary = cache.get(fresh_program())  # arch from the setting
    assert binary.arch == ARCH
    cache.flush_mirror()
    assert not (cache_dir / "programs").exists()


def test_bad_setting_value_is_a_config_error(cache_dir):
    with pytest.raises(kjit.ConfigError) as raised:
        kjit.Cache(cache_dir, memory_limit="lots")
    assert raised.value.variable == "memory_limit"


def test_unknown_setting_is_a_type_error(cache_dir):
    with pytest.raises(TypeError, match="colour"):
        kjit.Cache(cache_dir, colour="blue")


def test_disable_cache_keeps_nothing_on_disk(cache_dir):
    cache = kjit.Cache(cache_dir, disable_cache=True)
    cache.get(fresh_program(), ARCH)
    assert not cache.has_disk_tier
    assert cache.disk_entries == 0


def test_default_cache_get_and_lookup():
    program = fresh_program()
    binary = kjit.get(program, arch=ARCH)
    found = kjit.lookup(program, ARCH)
    assert found.source == "memory"
    assert found.binary.cubin == binary.cubin
    assert kjit.default_cache().cache_dir == os.environ["KJIT_CACHE_DIR"]


def test_uncached_compile_equals_the_cached_binary(cache):
    program = saxpy_program()
    assert kjit.compile(program, ARCH).cubin == cache.get(program, ARCH).cubin


def test_supported_archs_include_sm_90(cache):
    assert 90 in kjit.supported_archs()
    assert 90 in cache.supported_archs()
