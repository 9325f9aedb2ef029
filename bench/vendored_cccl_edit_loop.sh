#!/usr/bin/env bash
# A project's edit-compile loop on a vendored CCCL through kjit, side by side with `--no-cache`
# (issue 36; not for CI): br3.cu (bench/vendored_cccl_program.sh, a cub::BlockReduce kernel that
# includes a header of its own, my.h) compiled into one store, then my.h edited EDITS times to a
# value never compiled before, each compiled by `kjit compile --no-cache` and then into the store.
# The store's manifest of br3.cu gains an entry per edit up to 8, then lets the oldest go: what a
# miss costs as its manifest grows and once it is full. Prints each edit's wall time, peak memory
# and the time the lookup spent outside the compile, then the medians of edits 1–7 and of 8 on.
# Usage: bench/vendored_cccl_edit_loop.sh KJIT_BINARY [WORK_DIR] [EDITS]
set -euo pipefail
kjit=$(realpath "$1")
work=${2:-$(mktemp -d)}
edits=${3:-12}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cd "$work"
# shellcheck source=bench/vendored_cccl_program.sh
source "$here/vendored_cccl_program.sh"
store=$work/loop.$(date +%s%N)  # a new store each run (see vendored_cccl.sh on removing one)
run() {  # run LABEL [kjit compile options…]: one process; prints and appends its wall s, peak KB, outside ms
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o time.txt env KJIT_CACHE_DIR="$store" "$kjit" compile br3.cu -I vendor -o out --arch sm_90 "$@" >run.log 2>&1
  local wall peak outside
  read -r wall peak <time.txt
  outside=$(grep -o '[0-9.]* ms of it outside' run.log | cut -d' ' -f1 || true)
  printf '%-8s %6.2f s %6.0f MB  outside the compile %7s ms\n' "$label" "$wall" "$(echo "$peak / 1024" | bc -l)" "${outside:--}"
  echo "$label $wall $peak ${outside:-0}" >>loop.txt
}
rm -f loop.txt
echo "#define MY_FACTOR $RANDOM$RANDOM" >my.h
run first
for ((e = 1; e <= edits; e++)); do
  echo "#define MY_FACTOR $e$RANDOM$RANDOM" >my.h
  run "nocache$e" --no-cache
  run "edit$e"
done
summary() {  # summary FIRST LAST: the medians of those edits, over --no-cache
  awk -v a="$1" -v b="$2" '
    $1 ~ /^nocache/ { e = substr($1, 8) + 0; if (e >= a && e <= b) { pw[++np] = $2; pm[np] = $3 } }
    $1 ~ /^edit/ { e = substr($1, 5) + 0; if (e >= a && e <= b) { ew[++ne] = $2; em[ne] = $3; eo[ne] = $4 } }
    function median(v, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return v[int((n + 1) / 2)]
    }
    END {
      if (ne == 0) exit
      p = median(pw, np); w = median(ew, ne)
      printf "edits %d-%d: --no-cache %.2f s; miss %.2f s (%+.1f %%, %+.0f MB); outside the compile %.1f ms\n",
        a, b, p, w, 100 * (w - p) / p, (median(em, ne) - median(pm, np)) / 1024, median(eo, ne)
    }' loop.txt
}
summary 1 7
summary 8 "$edits"
