"""What `import kjit` maps into a Python process: the module built into a wheel (libkjit linked in
statically) carries the C++ runtime and zstd inside it, so a process that imports kjit loads no
libstdc++, libgcc_s or libzstd (together about 1.3-1.9 ms of `import kjit` measured here,
docs/python.md). A developer build's module uses the shared libkjit, which needs libstdc++."""

import os
import subprocess

import pytest

import kjit._kjit


def needed_libraries(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line]


def static_zstd_found():
    """Whether the build could link libzstd.a (meson.build links it only where it is)."""
    result = subprocess.run(["pkg-config", "--variable=libdir", "libzstd"], capture_output=True, text=True)
    folders = [result.stdout.strip()] if result.returncode == 0 and result.stdout.strip() else []
    return any(os.path.isfile(os.path.join(folder, "libzstd.a")) for folder in folders + ["/usr/lib"])


def test_the_wheels_module_maps_no_cxx_runtime_or_zstd():
    needed = needed_libraries(kjit._kjit.__file__)
    assert needed, "readelf found no NEEDED entries: is it still a shared object?"
    if any(name.startswith("libkjit") for name in needed):
        pytest.skip("a developer build's module: the shared libkjit needs libstdc++ itself")
    for library in ("libstdc++", "libgcc_s") + (("libzstd",) if static_zstd_found() else ()):
        assert not any(name.startswith(library) for name in needed), (library, needed)
