#!/usr/bin/env bash
# The fleet's compile lease and several servers (issue 14), against real redis-servers on
# 127.0.0.1: 8 processes over 4 cache folders asking for the same 16 programs at once compile each
# once (also programs with headers, whose keys are provisional); a lease whose holder died (planted,
# or a compiling process killed) expires; a compile longer than the lease renews it; a waiter is
# served the holder's upload; keys spread over two servers and every node finds them. Exits 77
# (skipped) when redis-server can't start.
# Usage: test_fleet.sh KJIT
set -u
kjit=$1
# shellcheck source=redis.sh
. "$(dirname "$0")/redis.sh"
start_or_skip "$port"
KJIT_REMOTE_CACHE=redis://127.0.0.1:$port

fleet_warm() {  # fleet_warm NAME PROCESSES FOLDERS [ARGS...]: that many `kjit warm`s of $files at once
  # over cache folders $work/NAME0.., outputs $work/NAMEwarm<i>.out/.err; fails if any failed
  local name=$1 processes=$2 folders=$3 i pid status=0 pids=()
  shift 3
  for ((i = 0; i < processes; i++)); do
    KJIT_CACHE_DIR=$work/$name$((i % folders)) "$kjit" warm "${files[@]}" "$@" --arch sm_80 --jobs 2 \
      >"$work/${name}warm$i.out" 2>"$work/${name}warm$i.err" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  return "$status"
}

await_lease() {  # prints the lease a compiling holder takes, once it appears (at most 4 s)
  for _ in $(seq 200); do
    [ -n "$(rcli --scan --pattern 'kjit:lease:*')" ] && break
    sleep 0.02
  done
  rcli --scan --pattern 'kjit:lease:*'
}

# --- 8 processes, 4 cache folders, the same 16 programs at once: 16 compiles in the fleet ---
kernels 16 f
check "8 processes all served" fleet_warm node 8 4
check "… each 16 programs, none failed" test "$(cat "$work"/nodewarm*.out | grep -c '^[0-9]* compiled, [0-9]* cached, 0 failed')" = 8
check "… 16 compiles in the whole fleet (got $(compiled_in "$work"/nodewarm*.out))" test "$(compiled_in "$work"/nodewarm*.out)" = 16
total=0
for n in 0 1 2 3; do
  KJIT_CACHE_DIR=$work/node$n exit_code 0 "$kjit" stats --json
  total=$((total + $(sed -n 's/.*"compiles": \([0-9]*\).*/\1/p' "$work/out")))
done
check "… kjit stats of the 4 folders count 16 compiles (got $total)" test "$total" = 16
check "… 16 records on the server" test "$(rcli --scan --pattern 'kjit:v*' | wc -l)" = 16
check "… no lease left" test "$(rcli --scan --pattern 'kjit:lease:*' | wc -l)" = 0
check "… no warning" bash -c "! grep -h warning $work/nodewarm*.err"

# --- the same with programs including a header through -I: their keys are provisional on every new
#     node (no manifest yet), and the lease is taken on the prediction's own key ---
mkdir -p "$work/inc"
printf '#define SCALE 3\n' >"$work/inc/scale.h"
files=()
for i in $(seq 8); do
  printf '#include "scale.h"\nextern "C" __global__ void h%s(int* p) { p[0] = SCALE * %s; }\n' "$i" "$i" >"$work/h$i.cu"
  files+=("$work/h$i.cu")
done
check "4 nodes warming 8 programs with a header all served" fleet_warm hnode 4 4 -I "$work/inc"
check "… 8 compiles in the whole fleet (got $(compiled_in "$work"/hnodewarm*.out))" test "$(compiled_in "$work"/hnodewarm*.out)" = 8

# --- a lease whose holder died expires: the next node compiles once it does ---
kernels 1 dead
KJIT_CACHE_DIR=$work/probe KJIT_REMOTE_CACHE= exit_code 0 "$kjit" compile "${files[0]}" --arch sm_80 -o "$work"
key=$(sed -n 's/^compiled \([0-9a-f]\{64\}\)$/\1/p' "$work/out")
rcli set "kjit:lease:v$fmt:$key" "dead node" PX 1500 >/dev/null
start=$(date +%s%N)
KJIT_CACHE_DIR=$work/e check "a node asks for a key whose holder died" exit_code 0 "$kjit" compile "${files[0]}" --arch sm_80 -o "$work"
elapsed=$((($(date +%s%N) - start) / 1000000))
check "… compiles it" grep -q "^compiled $key" "$work/out"
check "… after the lease expired (waited ${elapsed} ms)" test "$elapsed" -ge 1000
check "… not the whole bound" test "$elapsed" -lt 15000
check "… without a warning" bash -c "! grep -q warning '$work/err'"
check "… and uploads it" test "$(rcli exists "kjit:v$fmt:$key")" = 1

# --- a holder killed (kill -9) while it compiles: its lease names it, expires, another node compiles ---
# Heavy headers: the compile (≈0.8 s here) must outlast the poll below, or the holder is done and
# its lease released before the kill (seen as "kill: No such process" under load).
printf '#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda/std/complex>\n#include <cuda/std/chrono>\nextern "C" __global__ void heavy(__half* p) { p[0] = __float2half(1.5f); }\n' >"$work/heavy.cu"
KJIT_CACHE_DIR=$work/holder KJIT_COMPILE_LOCK_TIMEOUT=3s "$kjit" compile "$work/heavy.cu" --arch sm_80 -o "$work" \
  >/dev/null 2>&1 &
holder=$!
lease=$(await_lease)
kill -9 "$holder"
wait "$holder" 2>/dev/null
check "the compiling node held a lease naming it" bash -c "rcli() { redis-cli -p $port \"\$@\"; }; rcli get '$lease' | grep -q ' pid $holder '"
start=$(date +%s%N)
KJIT_CACHE_DIR=$work/next check "after the holder was killed, another node" \
  exit_code 0 "$kjit" compile "$work/heavy.cu" --arch sm_80 -o "$work"
elapsed=$((($(date +%s%N) - start) / 1000000))
check "… compiles it once the lease expired (${elapsed} ms), within the bound" test "$elapsed" -lt 15000
check "… without a warning" bash -c "! grep -q warning '$work/err'"
check "… and no lease is left" test -z "$(rcli --scan --pattern 'kjit:lease:*')"

# --- a compile longer than the holder's lease (KJIT_COMPILE_LOCK_TIMEOUT=300ms, ≈1-3 s of NVRTC): the
#     holder renews it while it compiles, so a node that asks meanwhile waits for its upload (before:
#     the lease expired after 300 ms, and the second node took it and compiled too) ---
for k in $(seq 80); do
  printf 'extern "C" __global__ void slow%s(float* p) {\n  float x = p[threadIdx.x];\n#pragma unroll\n  for (int i = 0; i < 3000; ++i) { x = sinf(x * %s.5f + i) * cosf(x - i); }\n  p[threadIdx.x] = x;\n}\n' "$k" "$k"
done >"$work/slow.cu"
KJIT_CACHE_DIR=$work/renew-a KJIT_COMPILE_LOCK_TIMEOUT=300ms "$kjit" compile "$work/slow.cu" --arch sm_80 -o "$work" \
  >"$work/renew-a.out" 2>"$work/renew-a.err" &
holder=$!
lease=$(await_lease)
check "a slow compile's holder took a lease" test -n "$lease"
sleep 0.6
held=$(rcli exists "$lease")
uploaded=$(rcli exists "${lease/kjit:lease:/kjit:}")  # released only after the upload: read second
check "… still there twice its expiry later, unless the compile was done" test "$held" = 1 -o "$uploaded" = 1
KJIT_CACHE_DIR=$work/renew-b KJIT_COMPILE_LOCK_TIMEOUT=60s check "a node asking meanwhile" \
  exit_code 0 "$kjit" compile "$work/slow.cu" --arch sm_80 -o "$work"
check "… is served the holder's upload, not compiling it again" grep -q "lookup: from remote" "$work/out"
wait "$holder"
check "the holder compiled it" test $? = 0
check "… and no lease is left" test -z "$(rcli --scan --pattern 'kjit:lease:*')"

# --- a waiter served a program with headers (a provisional key: no manifest yet on its node) prints
#     the key its entry is stored under, which `kjit show` finds there (it printed the provisional
#     key, which named no entry anywhere: issue 39) ---
{ printf '#include "scale.h"\n'; cat "$work/slow.cu"; } >"$work/slowh.cu"
KJIT_CACHE_DIR=$work/keyed-a KJIT_COMPILE_LOCK_TIMEOUT=60s "$kjit" compile "$work/slowh.cu" -I "$work/inc" --arch sm_80 \
  -o "$work" >"$work/keyed-a.out" 2>"$work/keyed-a.err" &
holder=$!
lease=$(await_lease)
check "a slow compile with a header took a lease" test -n "$lease"
KJIT_CACHE_DIR=$work/keyed-b KJIT_COMPILE_LOCK_TIMEOUT=60s check "a node asking meanwhile" \
  exit_code 0 "$kjit" compile "$work/slowh.cu" -I "$work/inc" --arch sm_80 -o "$work"
check "… is served the holder's upload" grep -q "lookup: from remote" "$work/out"
waiter_key=$(sed -n 's/^cache hit \([0-9a-f]\{64\}\)$/\1/p' "$work/out")
wait "$holder"
holder_key=$(sed -n 's/^compiled \([0-9a-f]\{64\}\)$/\1/p' "$work/keyed-a.out")
check "… and prints the holder's key (waiter '$waiter_key', holder '$holder_key')" \
  test -n "$holder_key" -a "$waiter_key" = "$holder_key"
KJIT_CACHE_DIR=$work/keyed-b check "… which kjit show finds in the waiter's cache" exit_code 0 "$kjit" show "$waiter_key"
KJIT_CACHE_DIR=$work/keyed-b check "… and a second lookup there is a disk hit under it" \
  exit_code 0 "$kjit" compile "$work/slowh.cu" -I "$work/inc" --arch sm_80 -o "$work"
check "… (got: $(head -1 "$work/out"))" grep -q "^cache hit $holder_key" "$work/out"

# --- a holder whose lease was taken over (it expired while the holder was stopped or slow, and
#     another node took it) neither renews nor releases the other node's lease: both are checked
#     against the holder's token. Without the checks the holder released the new holder's lease
#     (a third node could then compile it too) or kept it from expiring (surviving mutants,
#     docs/testing.md). The same slow program for sm_90: a key the server does not hold ---
KJIT_CACHE_DIR=$work/takeover KJIT_COMPILE_LOCK_TIMEOUT=300ms "$kjit" compile "$work/slow.cu" --arch sm_90 -o "$work" \
  >"$work/takeover.out" 2>"$work/takeover.err" &
holder=$!
lease=$(await_lease)
check "a slow compile's holder took a lease" test -n "$lease"
previous=$(rcli set "$lease" "another node" GET)  # another node's now, with no expiry
wait "$holder"
check "the holder compiled it" test $? = 0
check "… it held the lease when it was taken over (got '$previous')" test -n "$previous" -a "$previous" != "another node"
check "… the other node's lease is still there" test "$(rcli get "$lease")" = "another node"
check "… and was not renewed by the holder (pttl $(rcli pttl "$lease"))" test "$(rcli pttl "$lease")" = -1
rcli del "$lease" >/dev/null

# --- a holder that never finishes: the wait is bounded, then the node compiles with one warning ---
rcli del "kjit:v$fmt:$key" >/dev/null
rcli set "kjit:lease:v$fmt:$key" "wedged node" PX 60000 >/dev/null
KJIT_CACHE_DIR=$work/f KJIT_COMPILE_LOCK_TIMEOUT=1s check "a node waits for a wedged holder" \
  exit_code 0 "$kjit" compile "${files[0]}" --arch sm_80 -o "$work"
check "… then compiles" grep -q "^compiled $key" "$work/out"
check "… with one warning naming the bound" test "$(grep -c "waited 1.* s (KJIT_COMPILE_LOCK_TIMEOUT)" "$work/err")" = 1
rcli del "kjit:lease:v$fmt:$key" >/dev/null

# --- a lease without an expiry (no kjit node takes one: planted, or PERSISTed) holds no node off:
#     every node compiled at once, with no wait and no warning (before: each waited the whole bound,
#     on every node, for as long as the value stayed) ---
rcli del "kjit:v$fmt:$key" >/dev/null
rcli set "kjit:lease:v$fmt:$key" "no expiry" >/dev/null
KJIT_CACHE_DIR=$work/f2 KJIT_COMPILE_LOCK_TIMEOUT=1s check "a node finds a lease without an expiry" \
  exit_code 0 "$kjit" compile "${files[0]}" --arch sm_80 -o "$work"
check "… compiles" grep -q "^compiled $key" "$work/out"
check "… without waiting for it" bash -c "! grep -q 'waited' '$work/err'"
rcli del "kjit:lease:v$fmt:$key" >/dev/null

# --- a waiter is served the holder's upload ---
rcli rename "kjit:v$fmt:$key" saved >/dev/null
rcli set "kjit:lease:v$fmt:$key" "busy node" PX 60000 >/dev/null
KJIT_CACHE_DIR=$work/g "$kjit" compile "${files[0]}" --arch sm_80 -o "$work" >"$work/g.out" 2>"$work/g.err" &
waiter=$!
sleep 0.5
rcli rename saved "kjit:v$fmt:$key" >/dev/null
wait "$waiter"
check "a waiting node" test $? = 0
check "… is served the record that appeared" grep -q "lookup: from remote" "$work/g.out"
check "… and leaves the lease to its holder" test "$(rcli get "kjit:lease:v$fmt:$key")" = "busy node"
rcli del "kjit:lease:v$fmt:$key" >/dev/null

# --- two servers: keys spread over both by hash, every node finds them, in any order of the list ---
port2=$(free_port)
check "a second server starts" start_redis "$port2"
KJIT_REMOTE_CACHE="redis://127.0.0.1:$port redis://127.0.0.1:$port2"
rcli flushall >/dev/null
kernels 16 two
KJIT_CACHE_DIR=$work/two-a check "node A warms with two servers" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
on1=$(rcli --scan --pattern 'kjit:v*' | wc -l)
on2=$(redis-cli -p "$port2" --scan --pattern 'kjit:v*' | wc -l)
check "… 16 records in all ($on1 + $on2)" test $((on1 + on2)) = 16
check "… on both servers" test "$on1" -gt 0 -a "$on2" -gt 0
KJIT_CACHE_DIR=$work/two-b check "node B" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… compiles nothing" grep -q "^0 compiled, 16 cached" "$work/out"
# Each key's GET goes to the server that holds it: node B's 16 hits are remote hits, none a miss
# (before, every GET went to the first server: its misses cost a lease round trip each, and the
# lease path fetched the record from the right server, so "compiles nothing" still held).
KJIT_CACHE_DIR=$work/two-b exit_code 0 "$kjit" stats --json
check "… its 16 hits are remote hits" grep -q '"remote_hits": 16,' "$work/out"
check "… with no remote miss" grep -q '"remote_misses": 0,' "$work/out"
KJIT_REMOTE_CACHE="redis://127.0.0.1:$port2,redis://127.0.0.1:$port"
KJIT_CACHE_DIR=$work/two-c check "node C lists them the other way round" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… compiles nothing" grep -q "^0 compiled, 16 cached" "$work/out"
KJIT_CACHE_DIR=$work/two-c exit_code 0 "$kjit" stats --json
check "… all 16 from the remote, none a miss" grep -q '"remote_hits": 16, "remote_misses": 0,' "$work/out"
check "… and each record is on one server only" test -z "$(comm -12 <(rcli --scan --pattern 'kjit:v*' | sort) \
  <(redis-cli -p "$port2" --scan --pattern 'kjit:v*' | sort))"
KJIT_REMOTE_CACHE="redis://127.0.0.1:$port redis://127.0.0.1:$port/0"
check "a server listed twice is a config error" exit_code 1 "$kjit" config
check "… naming the variable" grep -q KJIT_REMOTE_CACHE "$work/err"

echo "fleet: $passed passed, $failed failed"
[ "$failed" = 0 ]
