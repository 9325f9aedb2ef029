#!/usr/bin/env bash
# The remote tier when its server fails (issue 14), against real redis-servers on 127.0.0.1: killed
# mid-run and restarted, slow (DEBUG SLEEP), full (maxmemory, noeviction), damaged values, a value
# of another type, a huge value, a wrong or missing password, a percent-encoded one. Callers are always served, nothing damaged is served, one clear warning
# each, and the password is never printed. Exits 77 (skipped) when redis-server can't start.
# Usage: test_failures.sh KJIT
set -u
kjit=$1
# shellcheck source=redis.sh
. "$(dirname "$0")/redis.sh"
start_or_skip "$port" --enable-debug-command yes
KJIT_REMOTE_CACHE=redis://127.0.0.1:$port
served() {  # served N: the last warm served N programs, none failed
  grep -q "^[0-9]* compiled, [0-9]* cached, 0 failed" "$work/out" &&
    [ "$(sed -n 's/^\([0-9]*\) compiled, \([0-9]*\) cached.*/\1 \2/p' "$work/out" | awk '{print $1 + $2}')" = "$1" ]
}
warnings() { grep -c "^kjit: warning" "$work/err"; }

# --- killed mid-run: served, one warning; restarted: used again by the next process ---
kernels 16 k
KJIT_CACHE_DIR=$work/kill "$kjit" warm "${files[@]}" --arch sm_80 --jobs 1 >"$work/out" 2>"$work/err" &
warm=$!
# Killed once the first upload has landed, so the others meet a dead server (a fixed sleep let an
# idle machine finish all 16 first: no warning at all).
for _ in $(seq 500); do
  [ -n "$(rcli --scan --pattern 'kjit:v*' 2>/dev/null)" ] && break
  sleep 0.01
done
stop_redis "$port" KILL
wait "$warm"
check "a warm whose server is killed mid-run exits 0" test $? = 0
check "… serves all 16" served 16
check "… with one warning (got $(warnings))" test "$(warnings)" = 1
check "… that names the server" grep -q "^kjit: warning: remote redis://127.0.0.1:$port/0: " "$work/err"
check "the server restarts" start_redis "$port" --enable-debug-command yes
KJIT_CACHE_DIR=$work/after check "a node after the restart" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… served, no warning" bash -c "grep -q '0 failed' '$work/out' && ! grep -q warning '$work/err'"
check "… uploads again" test "$(rcli --scan --pattern 'kjit:v*' | wc -l)" = 16

# --- slow: a server stuck in DEBUG SLEEP costs the I/O timeout once, then the node compiles ---
rcli debug sleep 6 >/dev/null &
sleeper=$!
sleep 0.3
start=$(date +%s%N)
KJIT_CACHE_DIR=$work/slow check "a node while the server sleeps 6 s" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
elapsed=$((($(date +%s%N) - start) / 1000000))
check "… serves all 16" served 16
check "… without waiting for the server (${elapsed} ms)" test "$elapsed" -lt 5500
check "… with one warning (got $(warnings))" test "$(warnings)" = 1
check "… that says it timed out" grep -q "no answer to GET within the 1000 ms timeout" "$work/err"
wait "$sleeper"

# --- full: maxmemory reached with noeviction: hits still served, uploads refused with one warning ---
rcli config set maxmemory-policy noeviction >/dev/null
rcli config set maxmemory 1 >/dev/null
KJIT_CACHE_DIR=$work/full-hit check "a node on a full server" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… gets the stored kernels" grep -q "^0 compiled, 16 cached, 0 failed" "$work/out"
kernels 4 full
KJIT_CACHE_DIR=$work/full check "a node compiling on a full server" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… serves all 4" served 4
check "… with one warning (got $(warnings))" test "$(warnings)" = 1
check "… that the server refused an upload" grep -q "refused an upload: OOM" "$work/err"
check "… nothing written" test "$(rcli --scan --pattern 'kjit:*full*' | wc -l)" = 0
"$kjit" doctor >"$work/out" 2>&1
check "kjit doctor warns of a full server that refuses uploads" \
  grep -q "^warning *remote .*, maxmemory 1 bytes, noeviction (when full it refuses uploads" "$work/out"
rcli config set maxmemory 0 >/dev/null

# --- damaged values: garbage, a truncated record, another key's record: none is served ---
kernels 3 bad
KJIT_CACHE_DIR=$work/bad-a exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
keys=()
for f in "${files[@]}"; do
  KJIT_CACHE_DIR=$work/bad-a exit_code 0 "$kjit" compile "$f" --arch sm_80 -o "$work"
  keys+=("kjit:v$fmt:$(grep -m1 -oE '^(compiled|cache hit) [0-9a-f]{64}$' "$work/out" | grep -oE '[0-9a-f]{64}')")
done
check "three keys on the server" test "$(for k in "${keys[@]}"; do rcli exists "$k"; done | grep -c 1)" = 3
rcli set "${keys[0]}" "garbage" >/dev/null
rcli setrange "${keys[1]}" "$(($(rcli strlen "${keys[1]}") / 2))" "xxxxxxxxxxxxxxxx" >/dev/null
rcli copy "${keys[0]}" tmp >/dev/null
rcli copy "${keys[2]}" "${keys[0]}" replace >/dev/null  # a good record, of another key
KJIT_CACHE_DIR=$work/bad-b check "a node offered damaged values" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… compiles the 2 damaged ones" grep -q "^2 compiled, 1 cached, 0 failed" "$work/out"
check "… one warning each (got $(warnings))" test "$(warnings)" = 2
KJIT_CACHE_DIR=$work/bad-b exit_code 0 "$kjit" stats --json
check "… counted as remote errors" grep -q '"remote_errors": 2' "$work/out"

# --- a record whose inputs section alone is damaged (its last bytes: the binary is whole): not
#     served either. A remote value checked by its artifacts' sum alone was served and copied into
#     the node's store without its source, options and headers (a surviving mutant, docs/testing.md) ---
kernels 1 inputs
KJIT_CACHE_DIR=$work/inputs-a exit_code 0 "$kjit" compile "${files[0]}" --arch sm_80 -o "$work"
key="kjit:v$fmt:$(grep -m1 -oE '^(compiled|cache hit) [0-9a-f]{64}$' "$work/out" | grep -oE '[0-9a-f]{64}')"
check "its record is on the server" test "$(rcli exists "$key")" = 1
rcli setrange "$key" "$(($(rcli strlen "$key") - 8))" "xxxxxxxx" >/dev/null
KJIT_CACHE_DIR=$work/inputs-b check "a node offered a record with damaged inputs" \
  exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… compiles it" grep -q "^1 compiled, 0 cached, 0 failed" "$work/out"
check "… with one warning (got $(warnings))" test "$(warnings)" = 1

# --- a value of another type (a hash) under one key: that key is compiled, with one warning, and its
#     upload replaces it; the node's other lookups still reach the server (before: GET's WRONGTYPE
#     opened the breaker, every later lookup of the process compiled, and the upload was dropped) ---
kernels 3 type
KJIT_CACHE_DIR=$work/type-a exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
KJIT_CACHE_DIR=$work/type-a exit_code 0 "$kjit" compile "${files[0]}" --arch sm_80 -o "$work"
key=kjit:v$fmt:$(grep -m1 -oE '^(compiled|cache hit) [0-9a-f]{64}$' "$work/out" | grep -oE '[0-9a-f]{64}')
rcli del "$key" >/dev/null
rcli hset "$key" field value >/dev/null
KJIT_CACHE_DIR=$work/type-b check "a node offered a hash under the first key" \
  exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80 --jobs 1
check "… compiles that one and gets the others from the server" grep -q "^1 compiled, 2 cached, 0 failed" "$work/out"
check "… with one warning (got $(warnings))" test "$(warnings)" = 1
check "… that names the wrong type" grep -q "WRONGTYPE" "$work/err"
check "… and the upload replaces it" test "$(rcli type "$key")" = string

# --- a huge value under a kjit key (256 MiB): not read whole (at most a record's size), one warning,
#     compiled, and the upload replaces it ---
kernels 1 huge
KJIT_CACHE_DIR=$work/huge-probe KJIT_REMOTE_CACHE='' exit_code 0 "$kjit" compile "${files[0]}" --arch sm_80 -o "$work"
key=$(sed -n 's/^compiled \([0-9a-f]\{64\}\)$/\1/p' "$work/out")
rss_of() {  # rss_of NAME: kjit compile of ${files[0]} in $work/NAME; its peak RSS (KiB) in $work/rss
  KJIT_CACHE_DIR=$work/$1 /usr/bin/time -f %M -o "$work/rss" "$kjit" compile "${files[0]}" --arch sm_80 -o "$work" \
    >"$work/out" 2>"$work/err"
}
rss_of huge-base  # compiles and uploads: the peak without a huge value
base_rss=$(cat "$work/rss")
rcli setrange "kjit:v$fmt:$key" $((256 << 20)) x >/dev/null  # the record, then zeros up to 256 MiB
check "a node offered a 256 MiB value" rss_of huge-b
huge_rss=$(cat "$work/rss")
check "… does not read it whole (peak $((huge_rss / 1024)) MiB, $((base_rss / 1024)) MiB without it)" \
  test "$huge_rss" -lt $((base_rss + 64 * 1024))
check "… compiles it" grep -q "^compiled $key" "$work/out"
check "… with one warning (got $(warnings))" test "$(warnings)" = 1
check "… that says the value is too large" grep -q "kjit:v$fmt:$key is over .* bytes" "$work/err"
check "… and the upload replaces it" test "$(rcli strlen "kjit:v$fmt:$key")" -lt $((1 << 20))

# --- passwords: a wrong one costs one warning and is never printed; the file's is used ---
port2=$(free_port)
secret=hunter2-kjit-secret
check "a server with a password starts" start_redis "$port2" --requirepass "$secret"
kernels 3 pw
KJIT_REMOTE_CACHE="redis://:not-$secret@127.0.0.1:$port2"
KJIT_CACHE_DIR=$work/pw-wrong check "a node with a wrong password" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… serves all 3" served 3
check "… with one warning (got $(warnings))" test "$(warnings)" = 1
check "… that AUTH was refused" grep -q "AUTH refused: WRONGPASS" "$work/err"
check "… never printing the password" bash -c "! grep -q '$secret' '$work/out' '$work/err'"
KJIT_REMOTE_CACHE="redis://127.0.0.1:$port2"
KJIT_CACHE_DIR=$work/pw-none check "a node without a password" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… one warning (got $(warnings))" test "$(warnings)" = 1
check "… NOAUTH" grep -q "NOAUTH" "$work/err"
# Percent-encoded in the URL: ',', ' ', '@' and '%' as %2C, %20, %40, %25 (before: sent as written)
port3=$(free_port)
check "a server whose password holds , @ and a space starts" start_redis "$port3" --requirepass "p@ss, w%rd"
KJIT_REMOTE_CACHE="redis://:p%40ss%2C%20w%25rd@127.0.0.1:$port3"
KJIT_CACHE_DIR=$work/pw-pct check "a node with the password percent-encoded" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… no warning" bash -c "! grep -q warning '$work/err'"
check "… uploads" test "$(redis-cli -p "$port3" -a 'p@ss, w%rd' --no-auth-warning --scan --pattern 'kjit:v*' | wc -l)" = 3
KJIT_REMOTE_CACHE="redis://127.0.0.1:$port2"
printf '%s\n' "$secret" >"$work/password"
chmod 600 "$work/password"
export KJIT_REMOTE_PASSWORD_FILE=$work/password
KJIT_CACHE_DIR=$work/pw-a check "node A with KJIT_REMOTE_PASSWORD_FILE" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… no warning" bash -c "! grep -q warning '$work/err'"
KJIT_CACHE_DIR=$work/pw-b check "node B with the file" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… served by the server" grep -q "^0 compiled, 3 cached" "$work/out"
check "kjit config shows the file" exit_code 0 "$kjit" config
check "… by its path" grep -q "KJIT_REMOTE_PASSWORD_FILE.*$work/password" "$work/out"
check "… never the password" bash -c "! grep -q '$secret' '$work/out' '$work/err'"
"$kjit" doctor >"$work/out" 2>"$work/err"
check "… ok remote, AUTH accepted" grep -q "^ok *remote *redis://:\*\*\*@127.0.0.1:$port2/0: Redis .*AUTH accepted" "$work/out"
printf 'wrong-%s\n' "$secret" >"$work/password"
check "kjit doctor with a wrong password" exit_code 1 "$kjit" doctor
check "… an error naming AUTH" grep -q "^error *remote .*AUTH refused" "$work/out"
check "… never the password" bash -c "! grep -q '$secret' '$work/out' '$work/err'"
export KJIT_REMOTE_PASSWORD_FILE=$work/no-such-file
KJIT_CACHE_DIR=$work/pw-c check "an unreadable password file" exit_code 0 "$kjit" warm "${files[@]}" --arch sm_80
check "… serves all 3" served 3
check "… with one warning naming the file" test "$(grep -c "KJIT_REMOTE_PASSWORD_FILE $work/no-such-file" "$work/err")" = 1
unset KJIT_REMOTE_PASSWORD_FILE

echo "failures: $passed passed, $failed failed"
[ "$failed" = 0 ]
