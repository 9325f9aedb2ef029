#!/usr/bin/env bash
# The remote tier (issue 14) against a real redis-server on 127.0.0.1: two cache folders ("nodes")
# share it (A compiles, B is served and backfilled, then hits locally with the server stopped), a
# corrupt value is not served, a server that is down costs one warning, ?readonly never writes,
# the password is never printed. Exits 77 (skipped) when redis-server can't start.
# Usage: test_remote.sh KJIT
set -u
kjit=$1
# shellcheck source=../cli/checks.sh
. "$(dirname "$0")/../cli/checks.sh"
unset KJIT_CACHE_DIR KJIT_BUNDLE
export KJIT_REMOTE_CACHE

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "SKIP: redis-server or redis-cli not installed (tools/setup installs redis-server)"
  exit 77
fi
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
    echo $((20000 + RANDOM % 40000))
}
port=$(free_port)
redis_pid=
start_redis() {  # start_redis [EXTRA redis-server ARGS...]: on $port, no persistence
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" "$@" >"$work/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 50); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  return 1
}
stop_redis() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  redis_pid=
}
trap 'stop_redis; rm -rf "$work"' EXIT
if ! start_redis; then
  echo "SKIP: redis-server could not start on 127.0.0.1:$port: $(tail -n 3 "$work/redis.log")"
  exit 77
fi
rcli() { redis-cli -p "$port" "$@"; }

for i in 1 2 3; do
  printf 'extern "C" __global__ void r%s(int* p) { p[threadIdx.x] = %s; }\n' "$i" "$i" >"$work/r$i.cu"
done
files=("$work/r1.cu" "$work/r2.cu" "$work/r3.cu")
KJIT_REMOTE_CACHE=redis://127.0.0.1:$port

# --- node A compiles; its uploads are on the server when the process has exited ---
export KJIT_CACHE_DIR=$work/a
check "node A warms" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "node A compiled all 3" grep -q "^3 compiled, 0 cached" "$work/out"
check "3 records under kjit:v5:" test "$(rcli --scan --pattern 'kjit:v5:*' | wc -l)" = 3

# --- node B: every kernel from the server, 0 compiles, written to its own store ---
export KJIT_CACHE_DIR=$work/b
check "node B warms" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "node B compiled nothing" grep -q "^0 compiled, 3 cached" "$work/out"
check "node B again" exit_code 0 "$kjit" compile "$work/r1.cu" --arch sm_80 -o "$work"
check "… as a disk hit now (backfilled)" grep -q "lookup: from disk" "$work/out"
check "node B's store holds 3 entries" exit_code 0 "$kjit" list
check "… listed" test "$(grep -c 'r[123]\.cu' "$work/out")" = 3

# --- a planted corrupt value is not served, counted, and the kernel compiled ---
export KJIT_CACHE_DIR=$work/c
printf 'extern "C" __global__ void bad(int* p) { p[0] = 7; }\n' >"$work/bad.cu"
KJIT_CACHE_DIR=$work/a exit_code 0 "$kjit" compile "$work/bad.cu" --arch sm_80 -o "$work"
key=kjit:v5:$(sed -n 's/^compiled \([0-9a-f]\{64\}\)$/\1/p' "$work/out")
check "node A uploaded bad.cu under its key" test "$(rcli exists "$key")" = 1
rcli set "$key" "KJITREC garbage" >/dev/null
check "node C compiles it" exit_code 0 "$kjit" compile "$work/bad.cu" --arch sm_80 -o "$work"
check "… not served from the remote" grep -q "^compiled " "$work/out"
check "… with a warning about the damaged record" grep -q "warning: remote redis://127.0.0.1:$port" "$work/err"
check "… and replaced on the server by its upload" test "$(rcli strlen "$key")" -gt 15

# --- ?readonly never writes ---
rcli flushall >/dev/null
export KJIT_CACHE_DIR=$work/d
check "a read-only node compiles" env KJIT_REMOTE_CACHE="redis://127.0.0.1:$port?readonly" \
  "$kjit" warm "${files[@]}" --arch sm_80
check "the server holds nothing" test "$(rcli dbsize)" = 0

# --- the password is never printed ---
KJIT_REMOTE_CACHE="redis://kjit:s3cret@127.0.0.1:$port/2"
check "kjit config with a password" exit_code 0 "$kjit" config
check "… masked" grep -q "redis://kjit:\*\*\*@127.0.0.1" "$work/out"
check "… never shown" bash -c "! grep -q s3cret '$work/out' '$work/err'"
KJIT_REMOTE_CACHE="redis://127.0.0.1:99999"
check "a bad URL is a config error" exit_code 1 "$kjit" config
check "… naming the variable" grep -q "KJIT_REMOTE_CACHE" "$work/err"
KJIT_REMOTE_CACHE=redis://127.0.0.1:$port

# --- server down: node B still hits locally, silently; a new node compiles with one warning ---
stop_redis
export KJIT_CACHE_DIR=$work/b
check "node B with the server stopped" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… hits locally" grep -q "^0 compiled, 3 cached" "$work/out"
check "… without a warning" bash -c "! grep -q warning '$work/err'"
export KJIT_CACHE_DIR=$work/e
check "a new node with the server down" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… compiles" grep -q "^3 compiled, 0 cached" "$work/out"
check "… with one warning" test "$(grep -c "warning: remote" "$work/err")" = 1

echo "remote: $passed passed, $failed failed"
[ "$failed" = 0 ]
