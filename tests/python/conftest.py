"""Fixtures of the Python package's tests: a cache folder per test, the programs they compile."""

import os
import tempfile

# Before kjit is imported: the default cache (kjit.get, kjit.lookup) of this test process lives in
# a folder of its own, never in the user's cache.
os.environ["KJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="kjit-pytest-default-")

import itertools  # noqa: E402

import pytest  # noqa: E402

import kjit  # noqa: E402

ARCH = "sm_90"

SAXPY = r"""
template <typename T>
__global__ void saxpy(T a, const T* x, T* y, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""

# A kernel with its own shared memory: TILE floats.
REVERSE = r"""
extern "C" __global__ void reverse(float* data)
{
  __shared__ float tile[TILE];
  tile[threadIdx.x] = data[threadIdx.x];
  __syncthreads();
  data[threadIdx.x] = tile[TILE - 1 - threadIdx.x];
}
"""

_unique = itertools.count()


def saxpy_program(**kwargs):
    """saxpy<float> with its name expression; keyword arguments go to kjit.Program."""
    kwargs.setdefault("name", "saxpy.cu")
    kwargs.setdefault("name_expressions", ["saxpy<float>"])
    return kjit.Program(SAXPY, **kwargs)


def fresh_program():
    """A saxpy program no cache has seen (its own define), so getting it compiles."""
    return saxpy_program(options=kjit.Options(defines={"KJIT_TEST_UNIQUE": f"{os.getpid()}_{next(_unique)}"}))


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


@pytest.fixture
def cache(cache_dir):
    return kjit.Cache(cache_dir)
