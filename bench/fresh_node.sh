#!/usr/bin/env bash
# A fresh fleet node's first remote hit against a disk hit (issue 38): `kjit compile` of one kernel
# that is cached, spawn to exit, in a new cache folder that only Redis can serve, and in a folder
# whose store has it; and, as kjit did before the fleet's toolchain memo, a new folder with that
# memo deleted from the server first (the node loads NVRTC and nvJitLink to learn the versions);
# and a new folder served by a bundle (what a fresh store costs by itself).
# The runs alternate, so load on the machine falls on all alike. Starts a
# redis-server on loopback (a free port, no persistence) and stops it.
# Usage: bench/fresh_node.sh [BUILD_DIR] [RUNS]
set -eu
build=${1:-build}
runs=${2:-30}
kjit=$(cd "$build" && pwd)/tools/kjit/kjit
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >"$dir/redis.log" 2>&1 &
redis=$!
trap 'kill $redis 2>/dev/null; wait $redis 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
export KJIT_REMOTE_CACHE=redis://127.0.0.1:$port
printf 'extern "C" __global__ void fresh(int* p) { p[threadIdx.x] = 1; }\n' >"$dir/fresh.cu"
KJIT_CACHE_DIR=$dir/warm "$kjit" compile "$dir/fresh.cu" --arch sm_80 -o "$dir/out" >/dev/null  # node A: compiles, uploads
KJIT_CACHE_DIR=$dir/warm "$kjit" export "$dir/kernels.kjitpack" >/dev/null  # for a fresh node's bundle hit
python3 - "$kjit" "$dir" "$runs" "$port" <<'PY'
import os, re, statistics, subprocess, sys, time
kjit, work, runs, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def forget_memo():
    for key in subprocess.run(["redis-cli", "-p", port, "--scan", "--pattern", "kjit:meta:toolchain:*"],
                              capture_output=True, text=True, check=True).stdout.split():
        subprocess.run(["redis-cli", "-p", port, "del", key], capture_output=True, check=True)
def run(folder, expect):
    env = dict(os.environ, KJIT_CACHE_DIR=folder)
    if expect == "bundle":
        env.update(KJIT_REMOTE_CACHE="", KJIT_BUNDLE=work + "/kernels.kjitpack")
    start = time.perf_counter()
    out = subprocess.run([kjit, "compile", work + "/fresh.cu", "--arch", "sm_80", "-o", work + "/out"],
                         env=env, capture_output=True, text=True, check=True).stdout
    ms = (time.perf_counter() - start) * 1000
    found = re.search(r"^lookup: from (\w+) in ([0-9.]+) ms", out, re.M)
    if not found or found.group(1) != expect:
        sys.exit("expected a hit from %s, got:\n%s" % (expect, out))
    return ms, float(found.group(2))
disk, fresh, unaided, bundle = [], [], [], []
run(work + "/warm", "disk")  # the page cache holds the store
for i in range(runs):
    disk.append(run(work + "/warm", "disk"))
    fresh.append(run(work + "/node%d" % i, "remote"))
    forget_memo()
    unaided.append(run(work + "/unaided%d" % i, "remote"))  # puts the memo back
    bundle.append(run(work + "/bundle%d" % i, "bundle"))
def line(name, runs):
    for what, ms in (("spawn to exit", [r[0] for r in runs]), ("its lookup", [r[1] for r in runs])):
        ms.sort()
        print("%-26s %-14s median %6.2f ms  min %6.2f  p90 %6.2f  (%d runs)"
              % (name, what, statistics.median(ms), ms[0], ms[int(0.9 * len(ms))], len(ms)))
line("disk hit", disk)
line("fresh node, remote hit", fresh)
line("… no memo on the server", unaided)
line("fresh node, bundle hit", bundle)
for what, i in (("spawn to exit", 0), ("its lookup", 1)):
    print("fresh node over disk hit, %s: median %+.2f ms, min %+.2f ms"
          % (what, statistics.median([r[i] for r in fresh]) - statistics.median([r[i] for r in disk]),
             min(r[i] for r in fresh) - min(r[i] for r in disk)))
PY
