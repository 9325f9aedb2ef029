#!/usr/bin/env bash
# `pip install .` as a user does it (build isolation: meson-python, meson and nanobind from PyPI)
# into a venv of its own, then the pytest suite against the installed package. The Meson build
# folder is kept in WORK_DIR/build, so a later run rebuilds only what changed.
# Usage: pip_install.sh PYTHON SOURCE_DIR WORK_DIR
set -eu
python=$1 source=$2 work=$3
mkdir -p "$work"
venv=$work/venv
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check pytest
start=$(date +%s)
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
  --config-settings=build-dir="$work/build" "$source"
echo "pip install . took $(($(date +%s) - start)) s"
# The installed package, not the source folder's python/kjit.
cd "$work"
"$venv/bin/python" -c 'import kjit, sys; print("installed:", kjit.__file__); sys.exit(kjit.__file__.startswith(sys.prefix) == False)'
exec "$source/tests/python/run_pytest.sh" "$venv/bin/python" "$source/tests/python"
