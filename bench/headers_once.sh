#!/usr/bin/env bash
# Store and mirror bytes per entry on a header-heavy program set: CCCL's cub/ copied into a project
# -I folder, four CUB kernels (bench/cub/) x BLOCK=128,256,512: 12 entries that share ~3.5 MB of
# headers. Prints what `kjit stats --json` reports, per entry. Used for docs/benchmarks.md.
# Usage: bench/headers_once.sh KJIT_BINARY [WORK_DIR]   (needs the toolkit's include/cccl/cub)
set -euo pipefail
kjit=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=${2:-$(mktemp -d)}
cuda=${CUDA_HOME:-/usr/local/cuda}
rm -rf "$work/cache" "$work/inc" && mkdir -p "$work/inc"
cp -r "$cuda/include/cccl/cub" "$work/inc/"
cd "$work"
start=$(date +%s)
for kernel in block_reduce block_scan block_radix_sort warp_reduce; do
  for block in 128 256 512; do
    KJIT_CACHE_DIR="$work/cache" "$kjit" compile "$here/cub/$kernel.cu" -I inc -DBLOCK=$block --arch sm_90 \
      -o "$work/out" >/dev/null
  done
done
echo "compiled 12 entries in $(( $(date +%s) - start )) s"
KJIT_CACHE_DIR="$work/cache" "$kjit" stats --json >"$work/stats.json"
python3 "$here/per_entry.py" "$work/stats.json"
