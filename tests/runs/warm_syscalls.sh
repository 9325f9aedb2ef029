#!/usr/bin/env bash
# A warm start does only what a hit needs: a fresh process that gets a cached kernel's cubin makes
# no folder (no mkdir of the cache, store or parent folders that exist), loads no compiler and
# no hash library, stats each NVRTC library once and does not resolve the store folder's path again.
# Traced with strace (skipped, exit 77, where strace is missing or may not trace).
# Usage: warm_syscalls.sh KJIT_BENCH_START
set -u
start=$(realpath "$1")
command -v strace >/dev/null && strace -o /dev/null true 2>/dev/null || { echo "no working strace: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export KJIT_CACHE_DIR=$dir/cache
source='extern "C" __global__ void warm(float* y) { y[threadIdx.x] *= 2.0f; }
'
"$start" check "$dir/cache/deeper" warm.cu "$source" >"$dir/first.txt" || { echo "FAIL: the first (cold) run failed"; exit 1; }
grep -q "compiles: 1" "$dir/first.txt" || { echo "FAIL: the first run did not compile:"; cat "$dir/first.txt"; exit 1; }
strace -f -o "$dir/trace" -e trace=mkdir,mkdirat,openat "$start" check "$dir/cache/deeper" warm.cu "$source" \
  >"$dir/warm.txt" || { echo "FAIL: the warm run failed"; cat "$dir/warm.txt"; exit 1; }
failed=0
grep -q "disk_hits: 1" "$dir/warm.txt" && grep -q "compiles: 0" "$dir/warm.txt" ||
  { echo "FAIL: the warm run was no disk hit:"; cat "$dir/warm.txt"; failed=1; }
if grep -E '(^|[0-9] +)mkdir(at)?\(' "$dir/trace"; then
  echo "FAIL: a warm start made folders (above)"
  failed=1
fi
if grep -E 'openat\(.*lib(nvrtc|nvJitLink)' "$dir/trace" | grep -v ENOENT; then
  echo "FAIL: a warm start opened a compiler library (above)"
  failed=1
fi
# SHA-256 (nettle) is loaded on the first SHA-256, which a hit does not run; XXH3 is inlined.
if grep -E 'openat\(.*lib(nettle|crypto|xxhash)' "$dir/trace" | grep -v ENOENT; then
  echo "FAIL: a warm start loaded a hash library (above)"
  failed=1
fi
# The hit alone ("hit": no check of loaded libraries afterwards): the store's map is found without
# reading /proc/self/maps, and the toolkit's include folders are not opened for their stamps (a
# program without includes: its key holds no toolkit fingerprint).
strace -f -o "$dir/hit_trace" -e trace=openat,stat,newfstatat,readlink,statfs,fstatfs "$start" hit "$dir/cache/deeper" warm.cu "$source" ||
  { echo "FAIL: the warm hit run failed"; failed=1; }
if grep -E 'openat\(.*/proc/self/maps' "$dir/hit_trace"; then
  echo "FAIL: a warm hit read /proc/self/maps (above)"
  failed=1
fi
if grep -E 'openat\(.*include.*O_PATH' "$dir/hit_trace"; then
  echo "FAIL: a warm hit of a program without includes checked the toolkit's folders (above)"
  failed=1
fi
# The toolchain's file identity uses the stats of toolkit discovery: each library stat-ed once.
for library in libnvrtc.so libnvrtc-builtins.so; do
  count=$(grep -E '(stat|statat)\(.*/'"$library"'\.' "$dir/hit_trace" | grep -vc ENOENT)
  if [ "$count" -gt 1 ]; then
    grep -E '(stat|statat)\(.*/'"$library"'\.' "$dir/hit_trace"
    echo "FAIL: a warm hit stat-ed $library $count times (above)"
    failed=1
  fi
done
# The store folder is opened by the cache folder's checked descriptor and named from it: not
# resolved again component by component (realpath), nor its filesystem asked by a /proc path.
if grep -E 'readlink\("[^"]*/store"|statfs\("/proc/self/fd' "$dir/hit_trace"; then
  echo "FAIL: a warm hit resolved the store folder's path again (above)"
  failed=1
fi
exit $failed
