#!/usr/bin/env bash
# kjit warm's defects found by review (issue 10), each checked end to end: a missing FILE, empty
# --arch parts, --name-expr, the compiled count of two processes at once, the toolchain probe and
# the time limit, the worker protocol's hello, PCH folders of killed workers.
# Usage: test_warm.sh KJIT
set -u
kjit=$1
worker=$(dirname "$kjit")/kjit-worker
# shellcheck source=checks.sh
. "$(dirname "$0")/checks.sh"

for i in 1 2 3; do
  printf 'extern "C" __global__ void w%s(int* p) { p[threadIdx.x] = %s; }\n' "$i" "$i" >"$work/w$i.cu"
done

# --- a FILE that can't be read is reported; the others are warmed (exit 1) ---
check "a missing FILE exits 1" exit_code 1 "$kjit" warm "$work/w1.cu" "$work/missing.cu" "$work/w2.cu" --arch sm_80
check "it names the missing file" grep -q "^failed: $work/missing.cu: " "$work/err"
check "the other files are warmed" grep -q "^2 compiled, 0 cached, 1 failed" "$work/out"

# --- every --arch part names an arch ---
for bad in "," "sm_80,,sm_90" "" "sm_80," "sm_xx" "sm_80,bogus"; do
  check "--arch '$bad' is a usage error" exit_code 2 "$kjit" warm "$work/w1.cu" --arch "$bad"
  check "it names --arch" grep -q -- "--arch" "$work/err"
done

# --- --name-expr reaches every program ---
printf 'template <typename T> __global__ void scale(T* p) { p[threadIdx.x] *= T(2); }\n' >"$work/tmpl.cu"
check "warm --name-expr" exit_code 0 "$kjit" warm "$work/tmpl.cu" --arch sm_90 --name-expr 'scale<float>' \
  --name-expr 'scale<double>'
check "it compiled the program" grep -q "^1 compiled, 0 cached, 0 failed" "$work/out"
check "compile with the same name expressions" exit_code 0 "$kjit" compile "$work/tmpl.cu" --arch sm_90 \
  --name-expr 'scale<float>' --name-expr 'scale<double>' -o "$work/tmpl_out"
check "both instantiations are in the cubin" sh -c "grep -q '^kernel _Z5scaleIfEvPT_:' '$work/out' && grep -q '^kernel _Z5scaleIdEvPT_:' '$work/out'"
check "and it was warm's entry (one entry in the cache)" exit_code 0 "$kjit" warm "$work/tmpl.cu" --arch sm_90 \
  --name-expr 'scale<float>' --name-expr 'scale<double>'
check "a hit" grep -q "^0 compiled, 1 cached, 0 failed" "$work/out"

# --- two processes warming the same files: each key counted compiled once in all ---
two=$work/two
mkdir "$two"
KJIT_CACHE_DIR=$two/cache "$kjit" warm "$work"/w*.cu --arch sm_80,sm_90 --jobs 1 >"$two/a" 2>&1 &
a=$!
KJIT_CACHE_DIR=$two/cache "$kjit" warm "$work"/w*.cu --arch sm_80,sm_90 --jobs 1 >"$two/b" 2>&1 &
b=$!
wait "$a"
wait "$b"
compiled=0
cached=0
for out in "$two/a" "$two/b"; do
  line=$(grep "compiled, .* cached, 0 failed" "$out")
  compiled=$((compiled + $(echo "${line:-99 compiled, 99 cached}" | cut -d' ' -f1)))
  cached=$((cached + $(echo "${line:-99 compiled, 99 cached}" | cut -d' ' -f3)))
done
check "two processes compiled 6 in all (got $compiled)" test "$compiled" = 6
check "and found the other 6 cached (got $cached)" test "$cached" = 6

# --- the toolchain probe never runs in a worker: a time limit names the item, not the probe ---
# --timeout 0 is no limit, as BatchOptions says (issue 39: it was refused as bad usage, exit 2).
check "warm --timeout 0 (no limit)" exit_code 0 env KJIT_CACHE_DIR="$work/cache_no_timeout" \
  "$kjit" warm "$work/w1.cu" --arch sm_80 --timeout 0
check "… compiles" grep -q "^1 compiled, 0 cached, 0 failed" "$work/out"
check "a negative --timeout is bad usage" exit_code 2 "$kjit" warm "$work/w1.cu" --arch sm_80 --timeout -1
check "a compile past --timeout fails" exit_code 1 env KJIT_CACHE_DIR="$work/cache_timeout" \
  "$kjit" warm "$work/w1.cu" --arch sm_80 --timeout 0.001
check "the item is named" grep -q "^failed: $work/w1.cu (sm_80): .*timed out" "$work/err"
check "the probe is not" sh -c "! grep -q kjit_probe '$work/err'"
check "the summary counts no compile" grep -q "^0 compiled, 0 cached, 1 failed" "$work/out"

# --- a worker that answers the hello otherwise is not used: the batch runs in-process ---
check "warm with a program that echoes as worker" exit_code 0 env KJIT_CACHE_DIR="$work/cache_echo" \
  "$kjit" warm "$work/w1.cu" "$work/w2.cu" --arch sm_80 --worker /bin/cat
check "it says why" grep -q "/bin/cat is not a compile worker of this kjit" "$work/err"
check "and compiles in-process" grep -q "^2 compiled, 0 cached, 0 failed" "$work/out"
check "the real worker answers the hello" exit_code 0 env KJIT_CACHE_DIR="$work/cache_real" \
  "$kjit" warm "$work/w3.cu" --arch sm_80 --worker "$worker"
check "without a warning" sh -c "! grep -q 'not a compile worker' '$work/err'"

# --- a worker started with stderr closed gets /dev/null there, not the next file it opens ---
# (its TMPDIR's PCH files and include copies would take descriptor 2 and NVRTC's messages)
fifo=$work/worker_in
mkfifo "$fifo"
sh -c "exec '$worker' <'$fifo' 2>&-" &
closed_worker=$!
exec 7>"$fifo"
# The worker waits in read(0) for its first request once main() has run.
for _ in $(seq 600); do
  case $(cat "/proc/$closed_worker/syscall" 2>/dev/null) in "0 0x0 "*) break ;; esac
  sleep 0.05
done
fd2=$(readlink "/proc/$closed_worker/fd/2" 2>/dev/null)
exec 7>&-
wait "$closed_worker"
check "the worker's descriptor 2 is /dev/null (got '$fd2')" test "$fd2" = /dev/null

# --- a killed worker leaves no NVRTC PCH folder in TMPDIR ---
tmp=$work/tmp
mkdir "$tmp"
for i in 1 2 3 4; do
  printf '#include <cuda_fp16.h>\n#include <cuda/std/complex>\nextern "C" __global__ void h%s(__half* p) { p[threadIdx.x] = __hadd(p[0], __float2half(%s.0f)); }\n' \
    "$i" "$i" >"$work/h$i.cu"
done
KJIT_CACHE_DIR=$work/cache_pch TMPDIR=$tmp "$kjit" warm "$work"/h*.cu --arch sm_90 --jobs 1 >"$work/pch" 2>&1 &
pid=$!
for _ in $(seq 600); do
  find "$tmp" -name '*.pch' | grep -q . && break
  sleep 0.1
done
worker_pid=$(pgrep -P "$pid" | head -1)
check "the worker made a PCH folder" test -n "$worker_pid"
[ -n "$worker_pid" ] && kill -KILL "$worker_pid"
wait "$pid"
check "no PCH folder is left after the worker was killed" test -z "$(find "$tmp" -name '__nvrtc_auto_pch_*' -o -name 'kjit-pch-*' -o -name '*.pch')"
check "nothing is left in TMPDIR" test -z "$(ls -A "$tmp")"

# --- a PCH that can't be written is not the programs' error ---
# Under a file size limit NVRTC can't write the workers' PCH ("catastrophic error: unable to
# obtain mapped memory"; kjit ignores SIGXFSZ, and so its workers). The items are compiled again
# without it. (Before, all four failed, and the next run served the four failures remembered.)
check "a batch whose PCH can't be written compiles every item" exit_code 0 \
  sh -c "ulimit -f 2000; KJIT_CACHE_DIR='$work/cache_fsize' exec '$kjit' warm '$work'/h1.cu '$work'/h2.cu '$work'/h3.cu '$work'/h4.cu --arch sm_90 --jobs 1"
check "… 4 compiled" grep -q "^4 compiled, 0 cached, 0 failed" "$work/out"
check "a later run finds them cached" exit_code 0 env KJIT_CACHE_DIR="$work/cache_fsize" "$kjit" warm "$work"/h1.cu \
  "$work"/h2.cu "$work"/h3.cu "$work"/h4.cu --arch sm_90 --jobs 1
check "… 4 cached" grep -q "^0 compiled, 4 cached, 0 failed" "$work/out"

# --- a warm or compile that stored nothing says so (issue 39) ---
# Before: "1 compiled, 0 cached, 0 failed", exit 0, with the store unusable (a folder where none
# can be made: /proc/self) or every commit failing (a file size limit under the store's size); and
# compile printed a key that `kjit show` could not find. The store's warning blamed "another user
# could plant kernels there" for a folder that could not be made.
check "warm into a store that can't be made exits 1" exit_code 1 env KJIT_CACHE_DIR=/proc/self \
  "$kjit" warm "$work/w1.cu" --arch sm_80
check "… and says in one line why nothing was stored" grep -q "^kjit warm: 1 of the 1 compiled kernels were not stored: cannot open the store" "$work/err"
check "… without blaming another user" sh -c "! grep -q plant '$work/err'"
check "compile into a store that can't be made still writes its files" exit_code 0 env KJIT_CACHE_DIR=/proc/self \
  "$kjit" compile "$work/w1.cu" --arch sm_80 -o "$work/proc_out"
check "… says it did not store it, and prints no key" grep -qx "compiled, not stored: cannot open the store .*" "$work/out"
check "warm into a cache that exists" exit_code 0 env KJIT_CACHE_DIR="$work/cache_small" "$kjit" warm "$work/w1.cu" --arch sm_80
check "warm whose commits fail (ulimit -f under the store's size) exits 1" exit_code 1 \
  sh -c "ulimit -f 64; KJIT_CACHE_DIR='$work/cache_small' KJIT_MIRROR=0 exec '$kjit' warm '$work/w2.cu' '$work/w3.cu' --arch sm_80"
check "… and says why" grep -q "^kjit warm: 2 of the 2 compiled kernels were not stored: cannot store compiled kernels: " "$work/err"
check "compile whose commit fails prints no key" exit_code 0 \
  sh -c "ulimit -f 64; KJIT_CACHE_DIR='$work/cache_small' KJIT_MIRROR=0 exec '$kjit' compile '$work/w2.cu' --arch sm_90 -o '$work/small_out'"
check "… and says it was not stored" grep -q "^compiled, not stored: cannot store compiled kernels: " "$work/out"

# A -I folder changed within the tick of the resolution's start (set ahead here) leaves no manifest:
# the entry is stored, but prepare() gives a provisional key. Before, compile said "compiled, not
# stored: the store did not keep them" and printed no key; warm counted it as not stored.
mkdir -p "$work/ahead/inc"
printf '#define AHEAD 5\n' >"$work/ahead/inc/ahead.h"
printf '#include "ahead.h"\nextern "C" __global__ void ahead(int* p) { *p = AHEAD; }\n' >"$work/ahead/a.cu"
touch -d '+1 minute' "$work/ahead/inc"
check "compile with a too-new -I folder" exit_code 0 env KJIT_CACHE_DIR="$work/cache_ahead" \
  "$kjit" compile "$work/ahead/a.cu" --arch sm_90 -I "$work/ahead/inc" -o "$work/ahead/out"
check "… prints the key it is stored under" grep -qE "^compiled [0-9a-f]{64}$" "$work/out"
ahead_key=$(grep -oE "^compiled [0-9a-f]{64}$" "$work/out" | cut -d' ' -f2)
check "… which kjit show finds" exit_code 0 env KJIT_CACHE_DIR="$work/cache_ahead" "$kjit" show "${ahead_key:-none}"
touch -d '+1 minute' "$work/ahead/inc"
check "warm of it with a too-new -I folder exits 0" exit_code 0 env KJIT_CACHE_DIR="$work/cache_ahead2" \
  "$kjit" warm "$work/ahead/a.cu" --arch sm_90 -I "$work/ahead/inc"

# What warm says about storing is what the store holds, whichever commit the file size limit
# stops: "not stored" exactly when the compiled kernel is missing (before, a failed commit of the
# other item's remembered compile error was counted as the compiled kernel not stored).
printf 'extern "C" __global__ void broken(int* p) { *p = undefined_name; }\n' >"$work/broken.cu"
for limit in 48 64 80; do
  rm -rf "$work/cache_mixed"
  sh -c "ulimit -f $limit; KJIT_CACHE_DIR='$work/cache_mixed' KJIT_MIRROR=0 exec '$kjit' warm '$work/w1.cu' '$work/broken.cu' --arch sm_90 --jobs 1" \
    >"$work/out" 2>"$work/err"
  said=$(grep -c "were not stored" "$work/err")
  held=$(env KJIT_CACHE_DIR="$work/cache_mixed" "$kjit" list --name w1.cu 2>/dev/null | grep -c "w1.cu")
  check "ulimit -f $limit: 'not stored' said ($said) exactly when the kernel is missing (listed: $held)" \
    test "$said" != "$held"
done

# A new store's toolchain rows go in with its first entry's commit; when that commit fails (a
# kernel too big for the file size limit), a later one takes them: the next process's disk hit
# loads no NVRTC (before: the rows went with the failed commit, and every later process of that
# store loaded NVRTC to learn the versions again).
head -c 3000000 /dev/urandom | base64 -w 100 | sed 's|^|// |' >"$work/big_comment"
{ cat "$work/w1.cu" "$work/big_comment"; } >"$work/big.cu"
sh -c "trap '' XFSZ; ulimit -f 2048; KJIT_CACHE_DIR='$work/cache_rows' KJIT_MIRROR=0 exec '$kjit' warm '$work/big.cu' '$work/w2.cu' --arch sm_80 --jobs 1" \
  >"$work/out" 2>"$work/err"
check "a warm whose first commit fails stores the second" grep -q "1 of the 2 compiled kernels were not stored" "$work/err"
check "… whose disk hit in the next process" exit_code 0 env KJIT_CACHE_DIR="$work/cache_rows" LD_DEBUG=files \
  LD_DEBUG_OUTPUT="$work/ld" "$kjit" compile "$work/w2.cu" --arch sm_80 -o "$work/rows_out"
check "… (a disk hit)" grep -q "^lookup: from disk" "$work/out"
check "… loads no NVRTC (the toolchain rows were stored)" bash -c "! cat '$work'/ld.* | grep -q 'file=[^ ]*libnvrtc'"
rm -f "$work"/ld.*

# A mirror that can't be written (its folder is a file) is said once per cause, not once per entry
# (before: one "cannot mirror" line per kernel, 56 of them on a full disk), and the store has them all.
mkdir -p "$work/cache_nomirror"
: >"$work/cache_nomirror/programs"
check "warm with a mirror that can't be written" exit_code 0 env KJIT_CACHE_DIR="$work/cache_nomirror" \
  "$kjit" warm "$work/w1.cu" "$work/w2.cu" "$work/w3.cu" --arch sm_90 --jobs 1
check "… says so once ($(grep -c 'cannot mirror' "$work/err") lines)" test "$(grep -c 'cannot mirror' "$work/err")" = 1
check "… naming the cause" grep -q "cannot mirror [0-9a-f]*: Not a directory" "$work/err"
check "… and stores all three" test "$(env KJIT_CACHE_DIR="$work/cache_nomirror" "$kjit" list | grep -c sm_90)" = 3

# --- prune --max-size keeps the most recently used entries that fit (issue 39: 60KiB removed all 28
# entries of a cache whose records took 125 KiB). The limit counted the mirror's shared files
# (programs/ and index.txt, 8 KiB here), which no removal frees: with an entry at about 36 KiB
# (4.4 KiB record, 32 KiB folder), 40KiB removed all 28 ---
mkdir -p "$work/many"
for i in $(seq 1 28); do
  printf 'extern "C" __global__ void m%s(int* p) { p[threadIdx.x] = %s; }\n' "$i" "$i" >"$work/many/m$i.cu"
done
many=(env KJIT_CACHE_DIR="$work/cache_many")
check "warm 28 one-line kernels" exit_code 0 "${many[@]}" "$kjit" warm "$work"/many/m*.cu --arch sm_80
check "prune --max-size 40KiB" exit_code 0 "${many[@]}" "$kjit" prune --max-size 40KiB
check "keeps an entry" test "$("${many[@]}" "$kjit" list | wc -l)" -ge 1
check "what it keeps fits: records and their folders" python3 -c "
import json, os, subprocess
d = json.loads(subprocess.check_output(['env', 'KJIT_CACHE_DIR=$work/cache_many', '$kjit', 'stats', '--json']))
programs = '$work/cache_many/programs'
folders = sum(os.lstat(os.path.join(r, n)).st_blocks * 512 for k in os.listdir(programs) if len(k) == 64
              for r, ds, fs in os.walk(os.path.join(programs, k)) for n in ds + fs) + \
          sum(os.lstat(os.path.join(programs, k)).st_blocks * 512 for k in os.listdir(programs) if len(k) == 64)
assert d['entries'] >= 1 and d['bytes']['records'] + folders <= 40 * 1024, (d, folders)"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
