#!/usr/bin/env bash
# Two kjit builds side by side on a project's edit-compile loop over a vendored CCCL (issue 36; not
# for CI): br3.cu (bench/vendored_cccl_program.sh) with my.h edited EDITS times to a value never
# compiled before; after each edit, BASE compiles it into a store of its own, NEW into another,
# then NEW with `--no-cache`. Wall times to the millisecond (date), so that differences of a few
# percent show; the first edit (an empty store) is left out. Prints each edit's times, then the
# medians (and quartiles) of each build's time over `--no-cache`.
# Usage: bench/vendored_cccl_edit_ab.sh BASE_KJIT NEW_KJIT [WORK_DIR] [EDITS]
set -euo pipefail
base=$(realpath "$1")
new=$(realpath "$2")
work=${3:-$(mktemp -d)}
edits=${4:-30}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cd "$work"
# shellcheck source=bench/vendored_cccl_program.sh
source "$here/vendored_cccl_program.sh"
stamp=$(date +%s%N)
base_store=$work/ab-base.$stamp
new_store=$work/ab-new.$stamp
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
timed() {  # timed STORE KJIT [options…]: the wall ms of one `kjit compile`
  local store=$1 kjit=$2
  shift 2
  local start
  start=$(date +%s%N)
  KJIT_CACHE_DIR="$store" "$kjit" compile br3.cu -I vendor -o out --arch sm_90 "$@" >/dev/null
  ms_since "$start"
}
rm -f ab.txt
for ((e = 1; e <= edits; e++)); do
  echo "#define MY_FACTOR $e$RANDOM$RANDOM" >my.h
  b=$(timed "$base_store" "$base")
  n=$(timed "$new_store" "$new")
  c=$(timed "$new_store" "$new" --no-cache)
  printf 'edit %3d  base %5d ms  new %5d ms  --no-cache %5d ms\n' "$e" "$b" "$n" "$c"
  [ "$e" -gt 1 ] && echo "$b $n $c" >>ab.txt
done
for column in 1 2; do
  awk -v c="$column" '{ print ($c - $3) / $3 * 100, $c - $3 }' ab.txt | sort -n | awk -v name="$([ "$column" = 1 ] && echo base || echo new)" '
    { p[NR] = $1; d[NR] = $2 }
    END { printf "%s over --no-cache: median %+.1f %% (%+d ms), quartiles %+.1f %% and %+.1f %%, %d edits\n",
            name, p[int((NR + 1) / 2)], d[int((NR + 1) / 2)], p[int((NR + 3) / 4)], p[int((3 * NR + 3) / 4)], NR }'
done
