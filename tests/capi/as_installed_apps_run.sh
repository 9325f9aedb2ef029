#!/usr/bin/env bash
# Runs a test program as an application runs outside the test harness: libkjit found through the
# program's own RUNPATH ($ORIGIN/../../lib: a relative folder, as a Meson subproject app's is), not
# LD_LIBRARY_PATH. It must pass, and its batches must compile in kjit-worker processes (the worker
# is found for the libkjit of this build however the loader named its folder).
# Usage: as_installed_apps_run.sh PROGRAM
set -u
program=$1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
env -u LD_LIBRARY_PATH "$program" 2>"$log"
status=$?
cat "$log" >&2
if grep -q "cannot start the compile worker" "$log"; then
  echo "the batch compiled in-process: no kjit-worker found for libkjit loaded through RUNPATH"
  exit 1
fi
exit $status
