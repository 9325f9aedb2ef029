#!/usr/bin/env bash
# What slows NVRTC down when something runs beside it (issue 36; not for CI). A vendored-CCCL
# program (as bench/vendored_cccl.sh makes it) compiled with `kjit compile --no-cache`: alone,
# beside a process that only spins on the CPU, beside one that copies a 16 MiB buffer over and
# over (more than this machine's 32 MiB L3 holds, with its source), beside one that copies a
# 2 MiB buffer (held by the caches); and kjit's own miss into a store that knows the toolchain
# (its threads resolve, hash, encode and mirror the headers beside NVRTC). Each run in its own
# process, the variants alternated ROUNDS times; prints the median of NVRTC's time
# (`KJIT_VERBOSE`'s "nvrtc … ms") for each, and its ratio to alone.
# Usage: bench/beside_nvrtc.sh KJIT_BINARY [WORK_DIR] [ROUNDS]
set -euo pipefail
kjit=$(realpath "$1")
work=${2:-$(mktemp -d)}
rounds=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cd "$work"
# shellcheck source=bench/vendored_cccl_program.sh
source "$here/vendored_cccl_program.sh"
printf 'extern "C" __global__ void k(int* p) { p[0] = 1; }\n' >k.cu
# The neighbours: python3, no compiler needed. Each runs until killed.
spin='while True: pass'
copy='import sys
n = int(sys.argv[1]) << 20
a = bytearray(b"\1") * n
b = bytearray(n)
while True:
    b[:] = a'
nvrtc_ms() {  # nvrtc_ms [CACHE_DIR]: NVRTC's ms of one compile (--no-cache without a folder)
  local how=(--no-cache)
  [ -n "${1:-}" ] && how=()
  KJIT_CACHE_DIR=${1:-$work/none} KJIT_VERBOSE=1 "$kjit" compile br.cu -I vendor --arch sm_90 -o out "${how[@]}" 2>&1 |
    sed -n 's/.*nvrtc \([0-9.]*\) ms.*/\1/p' | head -1
}
beside() {  # beside PYTHON_CODE [ARG]: NVRTC's ms with that code running on the other core
  python3 -c "$1" ${2:-} &
  local neighbour=$!
  sleep 0.2
  nvrtc_ms
  kill "$neighbour"
  wait "$neighbour" 2>/dev/null || true
}
variants=(alone cpu_spin copy_16MiB copy_2MiB kjit_miss)
for ((r = 0; r < rounds; r++)); do
  for v in "${variants[@]}"; do
    case $v in
      alone) ms=$(nvrtc_ms) ;;
      cpu_spin) ms=$(beside "$spin") ;;
      copy_16MiB) ms=$(beside "$copy" 16) ;;
      copy_2MiB) ms=$(beside "$copy" 2) ;;
      kjit_miss)
        rm -rf "$work/store"
        KJIT_CACHE_DIR="$work/store" "$kjit" compile k.cu --arch sm_90 -o out >/dev/null  # knows the toolchain
        ms=$(nvrtc_ms "$work/store") ;;
    esac
    echo "$v $ms" >>"$work/beside.txt"
  done
done
rm -rf "$work/store"
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
alone=$(awk '$1 == "alone" {print $2}' "$work/beside.txt" | median)
for v in "${variants[@]}"; do
  ms=$(awk -v v="$v" '$1 == v {print $2}' "$work/beside.txt" | median)
  printf '%-12s NVRTC median %8.1f ms  %+6.1f %%  (%d runs)\n' "$v" "$ms" "$(echo "100 * ($ms - $alone) / $alone" | bc -l)" "$rounds"
done
