#!/usr/bin/env bash
# The remote tier (issue 14) against a real redis-server on 127.0.0.1: two cache folders ("nodes")
# share it (A compiles, B is served and backfilled, then hits locally with the server stopped), a
# corrupt value is not served, a server that is down costs one warning, ?readonly never writes,
# the password is never printed. Exits 77 (skipped) when redis-server can't start.
# Usage: test_remote.sh KJIT   (KJIT_TEST_CACHE_PROBE: tests/unit/cache_probe)
set -u
kjit=$1
probe=${KJIT_TEST_CACHE_PROBE:?the cache_probe helper (meson test sets it)}
# shellcheck source=redis.sh
. "$(dirname "$0")/redis.sh"
start_or_skip "$port"

for i in 1 2 3; do
  printf 'extern "C" __global__ void r%s(int* p) { p[threadIdx.x] = %s; }\n' "$i" "$i" >"$work/r$i.cu"
done
files=("$work/r1.cu" "$work/r2.cu" "$work/r3.cu")
KJIT_REMOTE_CACHE=redis://127.0.0.1:$port

# --- node A compiles; its uploads are on the server when the process has exited ---
export KJIT_CACHE_DIR=$work/a
check "node A warms" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "node A compiled all 3" grep -q "^3 compiled, 0 cached" "$work/out"
check "3 records under kjit:v$fmt:" test "$(rcli --scan --pattern "kjit:v$fmt:*" | wc -l)" = 3

check "kjit stats of node A" exit_code 0 "$kjit" stats --json
check "… 3 remote misses" grep -q '"remote_misses": 3,' "$work/out"
check "… bytes written to the remote" grep -q '"remote_bytes_written": [1-9]' "$work/out"
check "kjit doctor checks the server" exit_code 0 "$kjit" doctor
check "… reachable, its version, read-write" \
  grep -q "^ok *remote *redis://127.0.0.1:$port/0: Redis [0-9.]*, .*, read-write$" "$work/out"

# --- a warm local hit with a remote configured never loads hiredis (nor NVRTC) ---
check "node A's warm hit" env LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld" \
  "$kjit" compile "$work/r1.cu" --arch sm_80 -o "$work/hit-out"
check "… loads no hiredis" bash -c "! cat '$work'/ld.* | grep -q 'file=libhiredis'"
check "… and no NVRTC" bash -c "! cat '$work'/ld.* | grep -q 'file=[^ ]*libnvrtc'"
check "… (LD_DEBUG saw the libraries it did load)" bash -c "cat '$work'/ld.* | grep -q 'file=liblmdb'"
rm -f "$work"/ld.*

# --- a fresh node's first remote hit loads no compiler (issue 38): the key's NVRTC and nvJitLink
#     versions come with the server (node A left them there under the libraries' build IDs) ---
check "a fresh node's first lookup" exit_code 0 env KJIT_CACHE_DIR="$work/fresh" LD_DEBUG=files \
  LD_DEBUG_OUTPUT="$work/ld" "$kjit" compile "$work/r1.cu" --arch sm_80 -o "$work/hit-out"
check "… is served from the remote" grep -q "^lookup: from remote" "$work/out"
check "… loads no NVRTC" bash -c "! cat '$work'/ld.* | grep -q 'file=[^ ]*libnvrtc'"
check "… nor nvJitLink" bash -c "! cat '$work'/ld.* | grep -q 'file=[^ ]*libnvJitLink'"
check "… (LD_DEBUG saw it load hiredis)" bash -c "cat '$work'/ld.* | grep -q 'file=libhiredis'"
rm -f "$work"/ld.*
# --- … and it waits for one fdatasync: the store's tables are not synced, the toolchain rows go in
#     with the entry's commit (it was three: the tables, the toolchain rows, the entry) ---
if strace -o /dev/null true 2>/dev/null; then
  check "a fresh node's first remote hit, traced" exit_code 0 env KJIT_CACHE_DIR="$work/fresh3" \
    strace -f -y -qq -o "$work/sync" -e trace=fdatasync,fsync "$kjit" compile "$work/r1.cu" --arch sm_80 -o "$work/hit-out"
  check "… syncs its store once (got $(grep -c 'data.mdb>' "$work/sync"))" test "$(grep -c 'data.mdb>' "$work/sync")" = 1
  check "… the next process there, with no server, is a disk hit" exit_code 0 env KJIT_CACHE_DIR="$work/fresh3" \
    KJIT_REMOTE_CACHE= LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld" "$kjit" compile "$work/r1.cu" --arch sm_80 -o "$work/hit-out"
  check "… (from disk)" grep -q "^lookup: from disk" "$work/out"
  check "… that loads no NVRTC (the toolchain rows were stored)" bash -c "! cat '$work'/ld.* | grep -q 'file=[^ ]*libnvrtc'"
  rm -f "$work"/ld.*
fi
# --- a second Cache of a fresh node's process on the same folder finds the fleet's fingerprint
#     that the first remembered: it reads no toolkit header (before: the first Cache's rows waited
#     for an entry's commit, and the second read the toolkit's 1 982 headers, ≈ 90 ms) ---
if strace -o /dev/null true 2>/dev/null; then
  check "two Caches of a fresh node's process" exit_code 0 env KJIT_CACHE_DIR="$work/fresh4" \
    strace -f -qq -o "$work/opens" -e trace=openat "$probe" "$work/fresh4" "$work/r1.cu" sm_80 --second-cache
  check "… both prepare it" grep -q "^second_key: " "$work/err"
  opened=$(grep -c 'cuda/std/\|cub/\|thrust/' "$work/opens" || true)
  check "… the second reads no toolkit header (opened $opened)" test "$opened" = 0
fi
memo=$(rcli --scan --pattern 'kjit:meta:toolchain:*')
check "one toolchain memo on the server" test "$(wc -w <<<"$memo")" = 1
rcli set "$memo" "garbage" >/dev/null
check "a fresh node, the memo damaged" exit_code 0 env KJIT_CACHE_DIR="$work/fresh2" LD_DEBUG=files \
  LD_DEBUG_OUTPUT="$work/ld" "$kjit" compile "$work/r2.cu" --arch sm_80 -o "$work/hit-out"
check "… learns the versions from NVRTC" bash -c "cat '$work'/ld.* | grep -q 'file=[^ ]*libnvrtc'"
check "… and finds the record all the same" grep -q "^lookup: from remote" "$work/out"
check "… and the memo is repaired" test "$(rcli get "$memo" | head -c 3)" != gar
rm -f "$work"/ld.*

# --- node B: every kernel from the server, 0 compiles, written to its own store ---
export KJIT_CACHE_DIR=$work/b
check "node B warms" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "node B compiled nothing" grep -q "^0 compiled, 3 cached" "$work/out"
check "node B again" exit_code 0 "$kjit" compile "$work/r1.cu" --arch sm_80 -o "$work"
check "… as a disk hit now (backfilled)" grep -q "lookup: from disk" "$work/out"
check "kjit stats of node B" exit_code 0 "$kjit" stats
check "… 3 remote hits, bytes read" grep -q "^remote: 3 hits, 0 misses, 0 errors; [1-9].* read, 0 B written" "$work/out"
check "… among the lookups" grep -q "^lookups: 4 hits (memory 0, disk 1, bundle 0, remote 3)" "$work/out"
check "node B's store holds 3 entries" exit_code 0 "$kjit" list
check "… listed" test "$(grep -c 'r[123]\.cu' "$work/out")" = 3

# --- a planted corrupt value is not served, counted, and the kernel compiled ---
export KJIT_CACHE_DIR=$work/c
printf 'extern "C" __global__ void bad(int* p) { p[0] = 7; }\n' >"$work/bad.cu"
KJIT_CACHE_DIR=$work/a exit_code 0 "$kjit" compile "$work/bad.cu" --arch sm_80 -o "$work"
key=kjit:v$fmt:$(sed -n 's/^compiled \([0-9a-f]\{64\}\)$/\1/p' "$work/out")
check "node A uploaded bad.cu under its key" test "$(rcli exists "$key")" = 1
rcli set "$key" "KJITREC garbage" >/dev/null
check "node C compiles it" exit_code 0 "$kjit" compile "$work/bad.cu" --arch sm_80 -o "$work"
check "… not served from the remote" grep -q "^compiled " "$work/out"
check "… with a warning about the damaged record" grep -q "warning: remote redis://127.0.0.1:$port" "$work/err"
check "… and replaced on the server by its upload" test "$(rcli strlen "$key")" -gt 15

# --- a moved project (no manifest for its new folders) is found under its predicted key: the
#     lookup says which tier served it, not "memory" ---
mkdir -p "$work/proj/inc"
printf '#define V 5\n' >"$work/proj/inc/v.h"
printf '#include "v.h"\nextern "C" __global__ void pv(int* p) { p[0] = V; }\n' >"$work/proj/pv.cu"
KJIT_CACHE_DIR=$work/pa exit_code 0 "$kjit" compile "$work/proj/pv.cu" -I "$work/proj/inc" --arch sm_80 -o "$work"
cp -r "$work/proj" "$work/moved"
KJIT_CACHE_DIR=$work/pb check "a moved project on a new node" \
  exit_code 0 "$kjit" compile "$work/moved/pv.cu" -I "$work/moved/inc" --arch sm_80 -o "$work"
check "… is served from the remote, and says so" grep -q "^lookup: from remote" "$work/out"
KJIT_CACHE_DIR=$work/pa check "the moved project on the node that compiled it" \
  exit_code 0 "$kjit" compile "$work/moved/pv.cu" -I "$work/moved/inc" --arch sm_80 -o "$work"
check "… is served from its store, and says so" grep -q "^lookup: from disk" "$work/out"

# --- ?readonly never writes ---
rcli flushall >/dev/null
export KJIT_CACHE_DIR=$work/d
check "a read-only node compiles" env KJIT_REMOTE_CACHE="redis://127.0.0.1:$port?readonly" \
  "$kjit" warm "${files[@]}" --arch sm_80
check "the server holds nothing" test "$(rcli dbsize)" = 0
KJIT_REMOTE_CACHE="redis://127.0.0.1:$port?readonly" check "kjit doctor of a read-only node" exit_code 0 "$kjit" doctor
check "… says read-only" grep -q "^ok *remote .*, read-only (?readonly: lookups only)$" "$work/out"

# --- the password is never printed ---
KJIT_REMOTE_CACHE="redis://kjit:s3cret@127.0.0.1:$port/2"
check "kjit config with a password" exit_code 0 "$kjit" config
check "… masked" grep -q "redis://kjit:\*\*\*@127.0.0.1" "$work/out"
check "… never shown" bash -c "! grep -q s3cret '$work/out' '$work/err'"
KJIT_REMOTE_CACHE="redis://127.0.0.1:99999"
check "a bad URL is a config error" exit_code 1 "$kjit" config
check "… naming the variable" grep -q "KJIT_REMOTE_CACHE" "$work/err"
KJIT_REMOTE_CACHE="redis://kjit:s3c?r,et@127.0.0.1:99999"
check "a bad URL with a password" exit_code 1 "$kjit" config
check "… never shows it" bash -c "! grep -e s3c -e et@ '$work/out' '$work/err'"
check "… nor in JSON" exit_code 1 "$kjit" config --json
check "… never shows it there" bash -c "! grep -e s3c -e et@ '$work/out' '$work/err'"
KJIT_REMOTE_CACHE=redis://127.0.0.1:$port

# --- server down: node B still hits locally, silently; a new node compiles with one warning ---
stop_redis "$port"
export KJIT_CACHE_DIR=$work/b
check "node B with the server stopped" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… hits locally" grep -q "^0 compiled, 3 cached" "$work/out"
check "… without a warning" bash -c "! grep -q warning '$work/err'"
export KJIT_CACHE_DIR=$work/e
check "kjit doctor with the server down" exit_code 1 "$kjit" doctor
check "… an error: not reachable" grep -q "^error *remote *redis://127.0.0.1:$port/0: .*refused" "$work/out"
check "a new node with the server down" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… compiles" grep -q "^3 compiled, 0 cached" "$work/out"
check "… with one warning" test "$(grep -c "warning: remote" "$work/err")" = 1

echo "remote: $passed passed, $failed failed"
[ "$failed" = 0 ]
