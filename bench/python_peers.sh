#!/usr/bin/env bash
# Python warm start side by side (bench/python_peers.py): makes VENV_DIR with PYTHON (default
# python3; the Python kjit's module was built for) unless it exists, installs the peers from PyPI
# there (cuda-core[cu13], cupy-cuda13x, triton; unpinned: the output names the versions), and runs
# the benchmark with it, kjit's package from PYTHONPATH (default: build/python of this checkout).
# Usage: [PYTHONPATH=<build>/python] [PYTHON=python3] bench/python_peers.sh VENV_DIR [RUNS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=$1
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -c 'import cuda.core, cupy, triton' 2>/dev/null ||
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "cuda-core[cu13]" cupy-cuda13x triton
PYTHONPATH=${PYTHONPATH:-$here/../build/python} exec "$venv/bin/python" "$here/python_peers.py" "${2:-30}"
