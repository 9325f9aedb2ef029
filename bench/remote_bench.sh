#!/usr/bin/env bash
# Runs kjit_bench_remote against a redis-server started here on loopback (a free port, no
# persistence), then stops it. Usage: bench/remote_bench.sh [BUILD_DIR] [PROGRAMS] [GETS]
set -eu
build=${1:-build}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >"$dir/redis.log" 2>&1 &
redis=$!
trap 'kill $redis 2>/dev/null; wait $redis 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
"$build/bench/kjit_bench_remote" "redis://127.0.0.1:$port" "${2:-32}" "${3:-2000}"
