#!/usr/bin/env bash
# End-to-end tests of the kjit command line. Usage: test_cli.sh KJIT GPU_TESTS SOURCE_ROOT
set -u
kjit=$1
gpu_tests=$2
root=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KJIT_CACHE_DIR=$work/cache
passed=0
failed=0

check() {  # check DESCRIPTION COMMAND...: passes when COMMAND succeeds
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $what" >&2
  fi
}

exit_code() {  # exit_code EXPECTED COMMAND...: runs COMMAND, compares its exit status
  local expected=$1
  shift
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  [ "$got" = "$expected" ] || { echo "exit $got, expected $expected: $*" >&2; cat "$work/err" >&2; return 1; }
}

# --- usage errors exit 2 and print usage ---
check "no arguments" exit_code 2 "$kjit"
check "unknown command" exit_code 2 "$kjit" frobnicate
check "unknown command prints usage" grep -q "usage: kjit" "$work/err"
check "compile without file" exit_code 2 "$kjit" compile
check "compile with unknown option" exit_code 2 "$kjit" compile "$root/examples/saxpy.cu" --bogus
check "unknown option prints usage" grep -q "usage: kjit compile" "$work/err"
check "version with extra args" exit_code 2 "$kjit" version extra

# --- version ---
check "version" exit_code 0 "$kjit" --version
check "version names kjit" grep -q "^kjit [0-9]" "$work/out"
check "version names NVRTC" grep -q "^NVRTC [0-9]*\.[0-9]" "$work/out"
check "version names nvJitLink" grep -q "^nvJitLink [0-9]*\.[0-9]" "$work/out"
check "version reports the driver" grep -q "^driver: " "$work/out"

# --- compile ---
mkdir -p "$work/out_dir"
check "compile saxpy" exit_code 0 "$kjit" compile "$root/examples/saxpy.cu" --arch sm_90 -o "$work/out_dir"
check "ptx written" grep -q ".entry saxpy" "$work/out_dir/saxpy.ptx"
check "cubin written" test -s "$work/out_dir/saxpy.sm_90.cubin"
check "cubin is ELF" sh -c "head -c 4 '$work/out_dir/saxpy.sm_90.cubin' | grep -q ELF"
check "timings printed" grep -q "nvrtc .* ms" "$work/out"
check "name expression" exit_code 0 "$kjit" compile "$root/examples/scale.cu" --arch sm_80 \
  --name-expr 'scale<float>' -o "$work/out_dir"
check "lowered name printed" grep -q "scale<float> -> _Z5scaleIfEvPT_S0_i" "$work/out"
check "defines reach the compiler" exit_code 0 "$kjit" compile "$root/examples/saxpy.cu" --arch compute_90 \
  -D KJIT_TEST_DEFINE=1 -o "$work/out_dir"
check "compute arch writes no cubin" test ! -e "$work/out_dir/saxpy.compute_90.cubin"

printf '__global__ void k(int* p) { *p = oops; }\n' >"$work/bad.cu"
check "compile error exits 1" exit_code 1 "$kjit" compile "$work/bad.cu" --arch sm_90 -o "$work/out_dir"
check "compile error shows the log" grep -q "oops" "$work/err"
check "bad arch exits 1" exit_code 1 "$kjit" compile "$root/examples/saxpy.cu" --arch sm_9x -o "$work/out_dir"
check "bad arch is explained" grep -q "sm_9x" "$work/err"
check "missing file exits 1" exit_code 1 "$kjit" compile "$work/none.cu" --arch sm_90

# --- the cache ---
check "second compile is a cache hit" exit_code 0 "$kjit" compile "$root/examples/saxpy.cu" --arch sm_90 -o "$work/out_dir"
check "hit reported" grep -q "^cache hit [0-9a-f]\{64\}" "$work/out"
key=$(sed -n 's/^cache hit //p' "$work/out")
check "mirror folder named by the key" test -f "$KJIT_CACHE_DIR/programs/$key/module/kernel.sm_90.cubin"
check "hash checks by hand" sh -c "cd '$KJIT_CACHE_DIR/programs/$key' && cat program.txt options.txt | sha256sum | grep -q '^$key '"
check "--no-cache bypasses" exit_code 0 "$kjit" compile "$root/examples/saxpy.cu" --arch sm_90 --no-cache -o "$work/out_dir"
check "bypass reported" grep -q "cache bypassed" "$work/out"
check "--cache-dir" exit_code 0 "$kjit" compile "$root/examples/saxpy.cu" --arch sm_80 --cache-dir "$work/other" -o "$work/out_dir"
check "--cache-dir used" test -d "$work/other/store"
check "cache stats" exit_code 0 "$kjit" cache stats
check "stats counts entries" grep -q "^entries: [1-9]" "$work/out"
rm -rf "$KJIT_CACHE_DIR/programs"
check "cache rebuild-mirror" exit_code 0 "$kjit" cache rebuild-mirror
check "mirror rebuilt" test -f "$KJIT_CACHE_DIR/programs/$key/module/kernel.ptx"
check "cache clear" exit_code 0 "$kjit" cache clear
check "clear removed the mirror" test ! -e "$KJIT_CACHE_DIR/programs"
check "bad cache action" exit_code 2 "$kjit" cache explode
check "bad environment value exits 1" exit_code 1 env KJIT_VERBOSE=maybe "$kjit" compile "$root/examples/saxpy.cu" --arch sm_90 -o "$work/out_dir"
check "bad environment value is named" grep -q "KJIT_VERBOSE" "$work/err"
check "verbose logs hits" exit_code 0 env KJIT_VERBOSE=1 "$kjit" compile "$root/examples/saxpy.cu" --arch sm_90 -o "$work/out_dir"
check "verbose line on stderr" grep -q "^kjit: miss, compiled saxpy.cu sm_90" "$work/err"

# --- explain ---
mkdir -p "$work/inc"
printf '#define VALUE 1\n' >"$work/inc/params.h"
printf '#include "params.h"\nextern "C" __global__ void k(int* p) { *p = VALUE; }\n' >"$work/explained.cu"
check "explain before any entry" exit_code 0 "$kjit" explain "$work/explained.cu" --arch sm_90 -I "$work/inc"
check "explain says no entry" grep -q "^miss: no earlier entry" "$work/out"
check "compile with a header" exit_code 0 "$kjit" compile "$work/explained.cu" --arch sm_90 -I "$work/inc" -o "$work/out_dir"
check "explain a hit" exit_code 0 "$kjit" explain "$work/explained.cu" --arch sm_90 -I "$work/inc"
check "explain says hit" grep -q "^hit: " "$work/out"
printf '#define VALUE 2\n' >"$work/inc/params.h"
check "explain after a header edit" exit_code 0 "$kjit" explain "$work/explained.cu" --arch sm_90 -I "$work/inc"
check "explain names the header" grep -q "include params.h ($work/inc/params.h) changed" "$work/out"
check "recompiled after the edit" exit_code 0 "$kjit" compile "$work/explained.cu" --arch sm_90 -I "$work/inc" -o "$work/out_dir"
check "edit gives a new compile" grep -q "^compiled " "$work/out"
check "explain without file" exit_code 2 "$kjit" explain
check "orphans lists nothing" exit_code 0 "$kjit" cache orphans
check "no orphans" test ! -s "$work/out"

# --- the GPU suite is skipped (77) without a GPU ---
if "$kjit" --version | grep -q "^driver: unavailable"; then
  check "gpu tests skip without a GPU" exit_code 77 "$gpu_tests"
fi

# --- honest results of the store (kept by the store part) ---
honest=$work/honest_cache
printf 'extern "C" __global__ void h(int* p) { *p = 3; }\n' >"$work/honest.cu"
check "compile into a fresh cache" exit_code 0 env KJIT_CACHE_DIR="$honest" "$kjit" compile "$work/honest.cu" --arch sm_90 -o "$work"
check "cache verify on a sound store" exit_code 0 env KJIT_CACHE_DIR="$honest" "$kjit" cache verify
check "verify says ok" grep -q "^ok: " "$work/out"
rm -rf "$honest/programs" && touch "$honest/programs"
check "rebuild-mirror that skips entries fails" exit_code 1 env KJIT_CACHE_DIR="$honest" "$kjit" cache rebuild-mirror
check "rebuild-mirror says what it skipped" grep -q "1 entries were not mirrored" "$work/err"
rm -f "$honest/programs"
for i in 1 2 3 4 5 6 7 8 9 10; do  # a program that takes a while to compile
  printf 'extern "C" __global__ void k%d(float* p) { float x = p[threadIdx.x]; for (int j = 0; j < 8; ++j) x = sinf(x) * %d.0f + cosf(x); p[threadIdx.x] = x; }\n' $i $i
done >"$work/slow.cu"
env KJIT_CACHE_DIR="$honest" "$kjit" compile "$work/slow.cu" --arch sm_90 -o "$work" >"$work/first" 2>&1 &
first=$!
inode=$(stat -c %i "$honest/store/compile.lock")
for _ in $(seq 1 500); do  # until the first process holds its compile lock (an OFD lock in /proc/locks)
  grep -q "OFDLCK.*:$inode " /proc/locks && break
  sleep 0.01
done
env KJIT_CACHE_DIR="$honest" "$kjit" compile "$work/slow.cu" --arch sm_90 -o "$work" >"$work/second" 2>&1
wait "$first"
check "a process that only waited says so" grep -q "^compiled by another process " "$work/second"
chmod 755 "$work"
if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups "$kjit" --help >/dev/null 2>&1; then
  # A store another user may read and lock but not write: clear must fail, not claim success.
  chgrp -R 65534 "$honest" && chmod 2750 "$honest" "$honest/store" && chmod 0640 "$honest/store/data.mdb" \
    && chmod 0660 "$honest/store/lock.mdb"
  check "clear of a read-only store fails" exit_code 1 env KJIT_CACHE_DIR="$honest" KJIT_SHARED_CACHE=1 \
    setpriv --reuid=65534 --regid=65534 --clear-groups "$kjit" cache clear
  check "clear says read-only" grep -q "read-only" "$work/err"
else
  echo "skipped: clear of a read-only store (needs root, and user nobody able to run $kjit)"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
