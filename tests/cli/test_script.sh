#!/usr/bin/env bash
# End-to-end tests of `kjit script build|list|show` and the scripts/ mirror they leave, rebuilt by
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

# The mirror is a view: deleted, it comes back from the store.
rm -rf "$KJIT_CACHE_DIR/scripts"
check "mirror --rebuild" exit_code 0 "$kjit" mirror --rebuild
check "the script folder is back" test -L "$dir/programs/5"
check "and resolves" test -s "$dir/programs/5/program.txt"
check "failed/building is back" test -s "$pdir/failed/building/1.txt"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
