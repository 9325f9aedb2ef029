#!/usr/bin/env bash
# A program built against the uninstalled kjit.pc (meson-uninstalled/, what a project next to a kjit
# build uses): it sees kjit's public headers only, not src/ (issue 39: Meson put <src>/src and
# <build>/src there, so a consumer's "util/file.hpp" could be kjit's), then builds and runs.
# Usage: uninstalled.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KJIT_CACHE_DIR=$work/cache
export PKG_CONFIG_PATH=$build/meson-uninstalled

cflags=$(pkg-config --cflags kjit-uninstalled)
for flag in $cflags; do
  case $flag in
    -I*/src | -I*/src/ | -I*/src/*)
      echo "FAILED: the uninstalled kjit.pc puts kjit's sources on the include path: $flag" >&2
      echo "Cflags: $cflags" >&2
      exit 1 ;;
  esac
done
libs=$(pkg-config --libs kjit-uninstalled)
c++ -std=c++17 -o "$work/consumer" "$root/tests/consumers/cmake/consumer.cpp" $cflags $libs
libdir=$(pkg-config --libs-only-L kjit-uninstalled | tr -d " ")
LD_LIBRARY_PATH=${libdir#-L} "$work/consumer" | sed 's/cmake consumer/uninstalled consumer/'
echo "1 passed, 0 failed"
