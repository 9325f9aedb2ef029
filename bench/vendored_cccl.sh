#!/usr/bin/env bash
# A program on a vendored CCCL through kjit, side by side with `--no-cache` (issue 36; not for CI):
# the toolkit's include/cccl copied into WORK_DIR/vendor and passed with -I, a cub::BlockReduce
# kernel for sm_90. Alternated ROUNDS times: `kjit compile --no-cache`, then a miss into an empty
# cache, then (`arch2`) the same program for sm_80 into that cache beside its own `--no-cache`
# (`nocache2`): the other arch starts from the first's closed resolution (docs/includes.md, "A
# closure used again"); then `program2` (br2.cu, another kernel of the same headers) into that
# store beside its own `--no-cache` (`nocache3`), the steady case of a project's edits; then
# `variant` (br2.cu again with another -D: a program of a name the store holds, as a JIT that
# instantiates one source many ways makes them) beside its own `--no-cache` (`nocache4`); then
# `edit` (br3.cu, compiled once, then again after its own header my.h was edited: a project's
# edit-compile loop) beside its own `--no-cache` (`nocache5`); then 5 warm hits in fresh processes. Prints each run's wall time, peak
# memory and the compile line's split (NVRTC, the lookup outside the compile), then the medians.
# Usage: bench/vendored_cccl.sh KJIT_BINARY [WORK_DIR] [ROUNDS]
set -euo pipefail
kjit=$(realpath "$1")
work=${2:-$(mktemp -d)}
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cd "$work"
# shellcheck source=bench/vendored_cccl_program.sh
source "$here/vendored_cccl_program.sh"
run() {  # run LABEL SOURCE [kjit compile options…]: one process, its wall s, peak MB and compile line
  local label=$1 source=$2
  shift 2
  /usr/bin/time -f "%e %M" -o time.txt "$kjit" compile "$source" -I vendor -o out "$@" >run.log 2>&1
  local wall peak nvrtc outside
  read -r wall peak <time.txt
  nvrtc=$(grep -o 'nvrtc [0-9.]* ms' run.log | head -n 1 | cut -d' ' -f2 || true)
  outside=$(grep -o '[0-9.]* ms of it outside' run.log | cut -d' ' -f1 || true)
  printf '%-8s %6.2f s %6.0f MB  nvrtc %7s ms  outside the compile %7s ms\n' "$label" "$wall" \
    "$(echo "$peak / 1024" | bc -l)" "${nvrtc:--}" "${outside:--}"
  echo "$label $wall $peak" >>runs.txt
}
rm -f runs.txt
# A cache folder per round, all removed at the end: removing one just before the next miss made
# that miss pay for it on an ext4 without a journal (this machine's), where for 60 s after an inode
# is freed each new inode of its group scans past it (ext4's recently_deleted(): 15 % of a miss's
# perf samples, on the mirror's thread), which a --no-cache run, making no files, never meets.
rm -rf cache cache.*
for ((r = 0; r < rounds; r++)); do
  run nocache br.cu --arch sm_90 --no-cache
  KJIT_CACHE_DIR=$work/cache.$r run miss br.cu --arch sm_90
  run nocache2 br.cu --arch sm_80 --no-cache
  KJIT_CACHE_DIR=$work/cache.$r run arch2 br.cu --arch sm_80
  run nocache3 br2.cu --arch sm_90 --no-cache
  KJIT_CACHE_DIR=$work/cache.$r run program2 br2.cu --arch sm_90
  run nocache4 br2.cu --arch sm_90 --no-cache -DKJIT_BENCH_VARIANT=1
  KJIT_CACHE_DIR=$work/cache.$r run variant br2.cu --arch sm_90 -DKJIT_BENCH_VARIANT=1
  echo '#define MY_FACTOR 1' >my.h
  KJIT_CACHE_DIR=$work/cache.$r run first3 br3.cu --arch sm_90
  echo "#define MY_FACTOR $((r + 2))" >my.h
  run nocache5 br3.cu --arch sm_90 --no-cache
  KJIT_CACHE_DIR=$work/cache.$r run edit br3.cu --arch sm_90
done
for r in 1 2 3 4 5; do
  KJIT_CACHE_DIR=$work/cache.0 run hit br.cu --arch sm_90
done
rm -rf cache.*
median() { awk -v l="$1" -v c="$2" '$1 == l {print $c}' runs.txt | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
plain=$(median nocache 2) miss=$(median miss 2)
printf 'median: --no-cache %.2f s %.0f MB; miss %.2f s %.0f MB (%+.1f %%, %+.0f MB); hit %.3f s\n' \
  "$plain" "$(echo "$(median nocache 3) / 1024" | bc -l)" "$miss" "$(echo "$(median miss 3) / 1024" | bc -l)" \
  "$(echo "100 * ($miss - $plain) / $plain" | bc -l)" "$(echo "($(median miss 3) - $(median nocache 3)) / 1024" | bc -l)" \
  "$(median hit 2)"
plain3=$(median nocache3 2) program2=$(median program2 2)
printf 'median, another program of the same headers (a store that holds them): --no-cache %.2f s %.0f MB; miss %.2f s (%+.1f %%, %+.0f MB)\n' \
  "$plain3" "$(echo "$(median nocache3 3) / 1024" | bc -l)" "$program2" "$(echo "100 * ($program2 - $plain3) / $plain3" | bc -l)" \
  "$(echo "($(median program2 3) - $(median nocache3 3)) / 1024" | bc -l)"
plain4=$(median nocache4 2) variant=$(median variant 2)
printf 'median, the same program with another -D (a store that holds it): --no-cache %.2f s; miss %.2f s (%+.1f %%, %+.0f MB)\n' \
  "$plain4" "$variant" "$(echo "100 * ($variant - $plain4) / $plain4" | bc -l)" \
  "$(echo "($(median variant 3) - $(median nocache4 3)) / 1024" | bc -l)"
plain5=$(median nocache5 2) edit=$(median edit 2)
printf 'median, the program after an edit of its own header: --no-cache %.2f s; miss %.2f s (%+.1f %%, %+.0f MB)\n' \
  "$plain5" "$edit" "$(echo "100 * ($edit - $plain5) / $plain5" | bc -l)" \
  "$(echo "($(median edit 3) - $(median nocache5 3)) / 1024" | bc -l)"
plain2=$(median nocache2 2) arch2=$(median arch2 2)
printf 'median, the other arch: --no-cache %.2f s; miss from the first arch'"'"'s closure %.2f s (%+.1f %%, %+.0f MB)\n' \
  "$plain2" "$arch2" "$(echo "100 * ($arch2 - $plain2) / $plain2" | bc -l)" \
  "$(echo "($(median arch2 3) - $(median nocache2 3)) / 1024" | bc -l)"
