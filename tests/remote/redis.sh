# Shared by the remote tests (sourced): ../cli/checks.sh, real redis-servers on 127.0.0.1, $port
# (free, for the first server, which start_or_skip starts) and rcli (redis-cli on it).
# Exits 77 (skipped, with a message) when redis-server or redis-cli is missing.
# shellcheck source=../cli/checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cli/checks.sh"
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "SKIP: redis-server or redis-cli not installed (tools/setup installs redis-server)"
  exit 77
fi
unset KJIT_CACHE_DIR KJIT_BUNDLE KJIT_REMOTE_PASSWORD_FILE
# Remote keys carry the record format (kjit:v<format>:<key>, kjit:lease:v<format>:<key>): read it
# from the source, so a format bump doesn't leave these tests looking under the old prefix.
fmt=$(sed -n 's/^constexpr std::uint32_t k_record_format = \([0-9]*\);.*/\1/p' \
  "$(dirname "${BASH_SOURCE[0]}")/../../src/store/record.hpp")
[ -n "$fmt" ] || { echo "FAIL: k_record_format not found in src/store/record.hpp"; exit 1; }
export KJIT_REMOTE_CACHE

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
    echo $((20000 + RANDOM % 40000))
}
port=$(free_port)
rcli() { redis-cli -p "$port" "$@"; }
declare -A redis_pids=()
start_redis() {  # start_redis PORT [EXTRA redis-server ARGS...]: no persistence; fails if it doesn't answer
  local port=$1
  shift
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" "$@" \
    >"$work/redis-$port.log" 2>&1 &
  redis_pids[$port]=$!
  for _ in $(seq 50); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q -e PONG -e NOAUTH && return 0
    sleep 0.1
  done
  return 1
}
stop_redis() {  # stop_redis PORT [SIGNAL]
  local pid=${redis_pids[$1]:-}
  [ -n "$pid" ] && kill "-${2:-TERM}" "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  unset "redis_pids[$1]"
}
stop_all_redis() {
  local port
  for port in "${!redis_pids[@]}"; do stop_redis "$port"; done
}
trap 'stop_all_redis; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
start_or_skip() {  # start_or_skip PORT [ARGS...]: the first server; exit 77 if it can't start
  if ! start_redis "$@"; then
    echo "SKIP: redis-server could not start on 127.0.0.1:$1: $(tail -n 3 "$work/redis-$1.log")"
    exit 77
  fi
}
# kernels N PREFIX: N small distinct .cu files, their paths in ${files[@]}
kernels() {
  files=()
  local i
  for i in $(seq "$1"); do
    printf 'extern "C" __global__ void %s%s(int* p) { p[threadIdx.x] = %s; }\n' "$2" "$i" "$i" >"$work/$2$i.cu"
    files+=("$work/$2$i.cu")
  done
}
# The sum of "N compiled" over the given warm outputs.
compiled_in() {
  cat "$@" | sed -n 's/^\([0-9]*\) compiled, .*/\1/p' | awk '{s += $1} END {print s + 0}'
}
