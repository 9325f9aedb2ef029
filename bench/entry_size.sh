#!/usr/bin/env bash
# Bytes per entry for a saxpy-sized program: examples/saxpy.cu padded to 4 KiB with real CUDA C++
# text (the start of CUB's block_reduce.cuh under #if 0, so it compresses like source does),
# compiled for sm_90 with 20 different -D values (20 entries). Prints `kjit stats --json` per entry.
# Usage: bench/entry_size.sh KJIT_BINARY [WORK_DIR]
set -euo pipefail
kjit=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=${2:-$(mktemp -d)}
cuda=${CUDA_HOME:-/usr/local/cuda}
rm -rf "$work/cache" && mkdir -p "$work"
{
  cat "$here/../examples/saxpy.cu"
  printf '\n#if 0\n'
  head -c 3800 "$cuda/include/cccl/cub/block/block_reduce.cuh"
  printf '\n#endif\n'
} >"$work/saxpy4k.cu"
for i in $(seq 1 20); do
  KJIT_CACHE_DIR="$work/cache" "$kjit" compile "$work/saxpy4k.cu" -DVARIANT=$i --arch sm_90 -o "$work/out" >/dev/null
done
KJIT_CACHE_DIR="$work/cache" "$kjit" stats --json >"$work/stats.json"
python3 "$here/per_entry.py" "$work/stats.json"
