#!/usr/bin/env bash
# kjit's Python package with NVRTC from PyPI instead of a toolkit (docs/python.md, "Without a
# toolkit"): a venv of its own with NVIDIA's wheels for the CUDA kjit was built with (NVRTC,
# nvJitLink, the runtime's and CCCL's headers), the package from PACKAGE_DIR (a build's python/
# folder), no toolkit configured. Exits 77 (skipped) when PyPI can't be reached.
# Usage: wheel_toolkit.sh PYTHON TESTS_DIR PACKAGE_DIR WORK_DIR CUDA_MAJOR.CUDA_MINOR
set -eu
python=$1 tests=$2 package_dir=$3 work=$4 cuda=$5
mkdir -p "$work"
venv=$work/venv
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
wheels=()
for wheel in nvidia-cuda-nvrtc nvidia-nvjitlink nvidia-cuda-runtime nvidia-cuda-cccl; do
  wheels+=("$wheel==$cuda.*")
done
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "${wheels[@]}"; then
  # Only where PyPI is out of reach: anything else is a failure.
  if ! "$venv/bin/python" -m pip download -q --no-deps -d "$work/probe" pip >/dev/null 2>&1; then
    echo "PyPI can't be reached: the wheels can't be installed"
    exit 77
  fi
  exit 1
fi
for variable in $(env | grep -o '^KJIT_[A-Z_]*'); do unset "$variable"; done
unset CUDA_HOME CUDA_PATH
rm -rf "$work/cache"
PYTHONPATH=$package_dir exec "$venv/bin/python" "$tests/wheel_toolkit_check.py" "$work"
