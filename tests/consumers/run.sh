#!/usr/bin/env bash
# Builds and runs the two consumers: kjit as a Meson subproject, and an installed kjit found by
# CMake's find_package and by pkg-config. Usage: run.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KJIT_CACHE_DIR=$work/cache
passed=0

# --- Meson: kjit as a subproject folder ---
cp -r "$root/tests/consumers/meson" "$work/meson"
mkdir -p "$work/meson/subprojects"
ln -s "$root" "$work/meson/subprojects/kjit"
meson setup "$work/meson-build" "$work/meson" >"$work/meson-setup.log" 2>&1 || { cat "$work/meson-setup.log"; exit 1; }
meson compile -C "$work/meson-build" >"$work/meson-compile.log" 2>&1 || { cat "$work/meson-compile.log"; exit 1; }
"$work/meson-build/consumer"
passed=$((passed + 1))
# As a subproject kjit builds only its library and installs nothing.
if [ -e "$work/meson-build/subprojects/kjit/tools/kjit/kjit" ] || [ -e "$work/meson-build/subprojects/kjit/tests" ]; then
  echo "FAILED: kjit built its CLI or tests as a subproject" >&2
  exit 1
fi
meson install -C "$work/meson-build" --destdir "$work/meson-dest" --no-rebuild >/dev/null 2>&1 || true
if [ -n "$(find "$work/meson-dest" -type f 2>/dev/null | head -1)" ]; then
  echo "FAILED: a consumer install put kjit files in place:" >&2
  find "$work/meson-dest" -type f >&2
  exit 1
fi
passed=$((passed + 1))

# --- Installed: CMake find_package and pkg-config ---
meson install -C "$build" --destdir "$work/dest" --no-rebuild >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
config=$(find "$work/dest" -name kjitConfig.cmake | head -1)
[ -n "$config" ] || { echo "FAILED: no kjitConfig.cmake installed" >&2; exit 1; }
prefix=$(cd "$(dirname "$config")/../../../.." && pwd)
libdir=$(dirname "$(find "$work/dest" -name 'libkjit.so' | head -1)")
cmake -S "$root/tests/consumers/cmake" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 \
  || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake-build" >"$work/cmake-build.log" 2>&1 || { cat "$work/cmake-build.log"; exit 1; }
LD_LIBRARY_PATH=$libdir "$work/cmake-build/consumer"
passed=$((passed + 1))

# kjit.pc requires only what linking libkjit can need: nettle is dlopen()ed, xxhash inlined and
# zstd linked in (where libzstd.a exists), so a machine without their -dev packages can still use
# it (before, pkg-config failed there).
pc=$libdir/pkgconfig/kjit.pc
unneeded='nettle|xxhash'
if readelf -d "$libdir/libkjit.so" | grep -q 'NEEDED.*libzstd'; then :; else unneeded="$unneeded|zstd"; fi
if grep -E '^Requires' "$pc" | grep -qE "$unneeded"; then
  echo "FAILED: $pc requires a library libkjit does not link ($unneeded):" >&2; grep -E '^Requires' "$pc" >&2; exit 1
fi
# Nor does it name a library by its absolute path (libzstd.a is inside libkjit: before, Libs.private
# named /usr/lib/…/libzstd.a, which a static link on another machine can't find; issue 39).
if grep -E '^Libs' "$pc" | grep -qE '(^|[ :])/[^ ]*\.a( |$)'; then
  echo "FAILED: $pc names an archive by its path:" >&2; grep -E '^Libs' "$pc" >&2; exit 1
fi
passed=$((passed + 1))
flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$work/dest pkg-config --cflags --libs kjit)
c++ -std=c++17 -o "$work/pkgconfig-consumer" "$root/tests/consumers/cmake/consumer.cpp" $flags
LD_LIBRARY_PATH=$libdir "$work/pkgconfig-consumer" | sed 's/cmake consumer/pkg-config consumer/'
passed=$((passed + 1))

echo "$passed passed, 0 failed"
