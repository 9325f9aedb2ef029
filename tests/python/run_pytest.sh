#!/usr/bin/env bash
# Runs the pytest suite of tests/python with PYTHON against the package in PACKAGE_DIR (a build's
# python/ folder; none: the installed package). Exits 77 (skipped) when PYTHON has no pytest.
# Usage: run_pytest.sh PYTHON TESTS_DIR [PACKAGE_DIR]
set -u
python=$1 tests=$2 package_dir=${3:-}
if ! "$python" -c "import pytest" 2>/dev/null; then
  echo "no pytest in $python (tools/python-venv installs it)"
  exit 77
fi
[ -n "$package_dir" ] && export PYTHONPATH=$package_dir${PYTHONPATH:+:$PYTHONPATH}
# Nothing of the caller's kjit settings: each test makes its own cache folder (conftest.py).
for variable in $(env | grep -o '^KJIT_[A-Z_]*'); do unset "$variable"; done
cd "$tests" && exec "$python" -m pytest -q -p no:cacheprovider .
