"""A kjit.Binary as the objects of cuda.core and CuPy: kjit compiles and caches, they load and launch.

Neither package is needed by kjit: each is imported when its helper is first called, and a clear
ImportError says what to install when it is missing. The standard modules the CuPy helper needs
are imported when it is called too: `import kjit` stays within a millisecond or two of Python's start.
"""

__all__ = ["object_code", "cupy_module"]


def _object_code_class():
    try:
        from cuda.core import ObjectCode
    except ImportError:
        try:  # cuda.core before 0.4 kept it under experimental
            from cuda.core.experimental import ObjectCode
        except ImportError as error:
            raise ImportError("kjit.object_code needs cuda.core: pip install cuda-core "
                              "cuda-bindings") from error
    return ObjectCode


def object_code(binary, *, name=None):
    """The binary as a cuda.core ``ObjectCode``, its name expressions mapped to their lowered
    names: ``object_code(binary).get_kernel("scale<float>")`` finds the kernel. A binary of a
    virtual arch (PTX only) becomes ``ObjectCode.from_ptx``. ``name`` defaults to the arch."""
    ObjectCode = _object_code_class()
    # Lowered names as bytes, as cuda.core's own Program.compile keeps them: it hands the mapped
    # name to the driver as a char* (a str raises TypeError in get_kernel).
    mapping = {expression: lowered.encode() for expression, lowered in binary.lowered_names.items()}
    name = binary.arch if name is None else name
    if binary.cubin:
        return ObjectCode.from_cubin(binary.cubin, name=name, symbol_mapping=mapping)
    # Bytes: a str given to from_ptx is taken for the path of a file.
    return ObjectCode.from_ptx(binary.ptx.encode(), name=name, symbol_mapping=mapping)


_cubin_dir = None


def _cubin_file(binary):
    """A file holding the binary's cubin (CuPy loads cubins from files), named by its content and
    kept until the process exits (CuPy may read it when a function is first asked for)."""
    import atexit
    import hashlib
    import os
    import shutil
    import tempfile

    global _cubin_dir
    if _cubin_dir is None:
        _cubin_dir = tempfile.mkdtemp(prefix="kjit-cupy-")
        atexit.register(shutil.rmtree, _cubin_dir, True)
    cubin = binary.cubin
    path = os.path.join(_cubin_dir, hashlib.sha256(cubin).hexdigest() + ".cubin")
    if not os.path.exists(path):
        # A name of its own for each writer (threads of this process may write the same cubin at
        # once), then renamed into place: a reader sees the whole file or none.
        fd, partial = tempfile.mkstemp(dir=_cubin_dir, suffix=".partial")
        with os.fdopen(fd, "wb") as out:
            out.write(cubin)
        os.replace(partial, path)
    return path


def cupy_module(binary):
    """The binary as a ``cupy.RawModule``. CuPy does not map name expressions of a module it did
    not compile: ask for a kernel by its lowered name,
    ``cupy_module(binary).get_function(binary.lowered_name("scale<float>"))``."""
    try:
        import cupy
    except ImportError as error:
        raise ImportError("kjit.cupy_module needs CuPy: pip install cupy-cuda13x "
                          "(or the wheel of your CUDA major)") from error
    if not binary.cubin:
        raise ValueError(f"a binary for {binary.arch} has no cubin: CuPy loads cubins; "
                         "get the program for a real arch (sm_XY)")
    return cupy.RawModule(path=_cubin_file(binary))
