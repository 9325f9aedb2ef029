#!/usr/bin/env bash
# End-to-end tests of `kjit script build|list|show|table|set-table|tune` and the scripts/ mirror they leave, rebuilt by
# `kjit mirror --rebuild`.
# Usage: test_script.sh KJIT
set -u
kjit=$1
# shellcheck source=checks.sh
. "$(dirname "$0")/checks.sh"

cat >"$work/tile.cu" <<'CU'
template <int BLOCK, int UNROLL> __global__ void tile(float* p) { p[threadIdx.x] *= BLOCK * UNROLL; }
CU
check "script build" exit_code 0 "$kjit" script build "$work/tile.cu" --name TileScale --space BLOCK=64,128,256 \
  --space UNROLL=1,2 --name-expr 'tile<{BLOCK},{UNROLL}>' --arch sm_80
check "it says six of six built" grep -q "6 of 6 schedules built for sm_80" "$work/out"
hash=$(sed -n 's/^script TileScale (\([0-9a-f]*\)).*/\1/p' "$work/out")
check "it prints the hash" test "${#hash}" = 64
dir=$KJIT_CACHE_DIR/scripts/tile_scale/$hash
check "the folder is snake_case/hash" test -d "$dir"
check "six schedule links" test "$(ls "$dir/programs" | sort -n | tr '\n' ' ')" = "0 1 2 3 4 5 "
check "links are relative to programs/" sh -c "readlink '$dir/programs/5' | grep -q '^\.\./\.\./\.\./\.\./programs/[0-9a-f]\{64\}$'"
check "link 5 is tile<256,2>" grep -q 'tile<256,2>' "$dir/programs/5/program.txt"
check "schedule.txt lists them" grep -q "^5	256	2	built	" "$dir/schedule.txt"

check "script list" exit_code 0 "$kjit" script list
check "list shows 6/6" grep -q "TileScale.*6/6 built  0 table rows" "$work/out"
check "script show by name" exit_code 0 "$kjit" script show TileScale
check "show lists the schedules" grep -q "5  BLOCK=256 UNROLL=2" "$work/out"
check "show says there is no table yet" grep -q "dispatch table: none yet" "$work/out"
check "script show by hash prefix" exit_code 0 "$kjit" script show "${hash:0:10}"
check "script show of an unknown name fails" exit_code 1 "$kjit" script show NoSuchScript
check "naming it" grep -q "NoSuchScript" "$work/err"

# --header NAME=FILE reaches the script's programs as an in-memory header (it was dropped: the
# build failed with NVRTC's "cannot open source file"); the file is nowhere NVRTC would search.
mkdir -p "$work/elsewhere"
echo '#define SCALE 3' >"$work/elsewhere/scale_value.h"
cat >"$work/scaled.cu" <<'CU'
#include "scale.h"
extern "C" __global__ void scaled(int* p) { p[0] = BLOCK * SCALE; }
CU
check "a script's --header is an in-memory header of its programs" exit_code 0 "$kjit" script build "$work/scaled.cu" \
  --name scaled --space BLOCK=32,64 --header scale.h="$work/elsewhere/scale_value.h" --arch sm_80
check "both schedules built with it" grep -q "2 of 2 schedules built for sm_80" "$work/out"

# A schedule that fails to compile lands in failed/building/; the others are built.
cat >"$work/picky.cu" <<'CU'
extern "C" __global__ void picky(int* p) { p[0] = BLOCK; }
static_assert(BLOCK != 64, "BLOCK 64 is not supported");
CU
check "a build with a failing schedule succeeds" exit_code 0 "$kjit" script build "$work/picky.cu" --name picky \
  --space BLOCK=32,64 --arch sm_80
check "1 of 2 built" grep -q "1 of 2 schedules built" "$work/out"
check "the failed one names its log file" grep -q "FAILED (failed/building/1.txt)" "$work/out"
pdir=$(ls -d "$KJIT_CACHE_DIR"/scripts/picky/*/)
check "failed/building/1.txt holds the log" grep -q "BLOCK 64 is not supported" "$pdir/failed/building/1.txt"
check "no link for it" test ! -e "$pdir/programs/1"
check "all failing is an error" exit_code 1 "$kjit" script build "$work/picky.cu" --name picky --space BLOCK=64 \
  --arch sm_80
check "that says none built" grep -q "none of its 1 schedules built" "$work/err"

# Hostile names stay below scripts/.
check "a hostile name builds" exit_code 0 "$kjit" script build "$work/picky.cu" --name '../../../escape' \
  --space BLOCK=32 --arch sm_80
check "inside scripts/" test -d "$KJIT_CACHE_DIR/scripts/escape"
check "nothing beside the cache" test ! -e "$work/escape" -a ! -e "$KJIT_CACHE_DIR/escape"

# A name with control characters is printed on one line, its escapes made harmless ('?').
check "a name with a newline and an escape builds" exit_code 0 "$kjit" script build "$work/picky.cu" \
  --name "$(printf 'Two\nLines\033[31m')" --space BLOCK=32 --arch sm_80
check "build prints it on one line" grep -q "^script Two?Lines?\[31m (" "$work/out"
check "script show of it" exit_code 0 "$kjit" script show "$(printf 'Two\nLines\033[31m')"
check "show prints it on one line" grep -q "^script Two?Lines?\[31m$" "$work/out"
check "no escape reaches the output" sh -c "! grep -q \"\$(printf '\033')\" '$work/out'"

# With the mirror off, nothing is written to scripts/ and no folder is named.
check "a build with KJIT_MIRROR=0" exit_code 0 env KJIT_MIRROR=0 "$kjit" script build "$work/picky.cu" \
  --name quiet --space BLOCK=32 --arch sm_80
check "names no mirror folder" sh -c "! grep -q '^mirror:' '$work/out'"
check "writes none" test ! -e "$KJIT_CACHE_DIR/scripts/quiet"
check "yet it is stored" sh -c "'$kjit' script list | grep -q ' quiet '"

# Without a disk cache nothing is mirrored, and no mirror folder is named.
check "a build with KJIT_DISABLE_CACHE=1" exit_code 0 env KJIT_DISABLE_CACHE=1 "$kjit" script build "$work/picky.cu" \
  --name memory_only --space BLOCK=32 --arch sm_80
check "names no mirror folder either" sh -c "! grep -q '^mirror:' '$work/out'"
check "writes none either" test ! -e "$KJIT_CACHE_DIR/scripts/memory_only"

# Bad usage.
check "a --space without =" exit_code 2 "$kjit" script build "$work/tile.cu" --name t --space BLOCK --arch sm_80
check "a --space with no values" exit_code 2 "$kjit" script build "$work/tile.cu" --name t --space BLOCK= --arch sm_80
check "a --space with no name" exit_code 2 "$kjit" script build "$work/tile.cu" --name t --space =1 --arch sm_80
check "script show ''" exit_code 2 "$kjit" script show ''
check "no --space" exit_code 2 "$kjit" script build "$work/tile.cu" --name t --arch sm_80
for space in BLOCK=64, BLOCK=,64 BLOCK=64,,128; do  # an empty value, as an empty size name in --sizes
  check "a --space with an empty value ($space)" exit_code 2 "$kjit" script build "$work/tile.cu" --name t \
    --space "$space" --arch sm_80
  check "that prints the usage" grep -q "^usage:" "$work/err"
done
check "a bad parameter name" exit_code 1 "$kjit" script build "$work/tile.cu" --name t --space 1X=1 --arch sm_80
check "an unknown action" exit_code 2 "$kjit" script frobnicate

# Dispatch tables from the command line (issue 39: no command set, showed or tuned one): set-table
# builds the script again (every schedule a hit) and gives it its rows; table prints them as
# set-table reads them; a bundle carries them; tune needs a GPU and says so where there is none.
tile=("$work/tile.cu" --name TileScale --space BLOCK=64,128,256 --space UNROLL=1,2 --name-expr 'tile<{BLOCK},{UNROLL}>'
      --arch sm_80)
check "script set-table with --row" exit_code 0 "$kjit" script set-table "${tile[@]}" --row 1024=2 --row 4096=5
check "it says two rows" grep -q "dispatch table of 2 rows set" "$work/out"
check "script table" exit_code 0 "$kjit" script table TileScale
check "table prints the rows" sh -c "grep -q '^1024=2  # given$' '$work/out' && grep -q '^4096=5  # given$' '$work/out'"
check "valid everywhere" grep -q "^# fingerprint: kjit_version=\* arch=\* gpu=\* compute_capability=\* cuda_version=\*$" "$work/out"
check "script list counts them" sh -c "'$kjit' script list | grep -q 'TileScale.*6/6 built  2 table rows'"
check "the mirror's dispatch_table.txt has them" grep -q "1024" "$dir/dispatch_table.txt"
cp "$work/out" "$work/table.txt"
check "script set-table --rows of what table printed" exit_code 0 "$kjit" script set-table "${tile[@]}" \
  --rows "$work/table.txt"
check "script table again" exit_code 0 "$kjit" script table "${hash:0:10}"
check "the same rows" bash -c "grep -v '^#' '$work/out' | diff - <(grep -v '^#' '$work/table.txt')"
check "a schedule that is not built" exit_code 1 "$kjit" script set-table "${tile[@]}" --row 1024=9
check "a size that is no tuning key" exit_code 1 "$kjit" script set-table "${tile[@]}" --row 1000=1
check "that names the key" grep -q "1000 is not a tuning key (1024 is)" "$work/err"
check "a row that is no row" exit_code 2 "$kjit" script set-table "${tile[@]}" --row 1024
check "no rows" exit_code 2 "$kjit" script set-table "${tile[@]}"
check "script table of an unknown name" exit_code 1 "$kjit" script table NoSuchScript
check "export" exit_code 0 "$kjit" export "$work/tile.kjit"
check "import into a new folder" exit_code 0 env KJIT_CACHE_DIR="$work/elsewhere" "$kjit" import "$work/tile.kjit"
check "the table came along" exit_code 0 env KJIT_CACHE_DIR="$work/elsewhere" "$kjit" script table TileScale
check "with its rows" bash -c "grep -v '^#' '$work/out' | diff - <(grep -v '^#' '$work/table.txt')"
check "tune without a GPU fails" exit_code 1 env CUDA_VISIBLE_DEVICES=-1 "$kjit" script tune "${tile[@]}" \
  --at 2048 --grid 'n/BLOCK' --block BLOCK --arg buffer:n*4
check "saying there is no GPU" grep -q "no GPU is present (.*): tuning times each schedule on a GPU" "$work/err"
check "on one line" test "$(wc -l <"$work/err")" = 1
check "and tuned nothing" sh -c "'$kjit' script table TileScale | grep -q '^2048=' && exit 1 || exit 0"

# The mirror is a view: deleted, it comes back from the store.
rm -rf "$KJIT_CACHE_DIR/scripts"
check "mirror --rebuild" exit_code 0 "$kjit" mirror --rebuild
check "the script folder is back" test -L "$dir/programs/5"
check "and resolves" test -s "$dir/programs/5/program.txt"
check "failed/building is back" test -s "$pdir/failed/building/1.txt"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
