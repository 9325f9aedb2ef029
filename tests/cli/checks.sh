# Shared by the CLI test scripts (sourced): a private work folder and cache, and the two checks.
# After sourcing: $work (removed at exit), KJIT_CACHE_DIR=$work/cache, $passed and $failed.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KJIT_CACHE_DIR=$work/cache
passed=0
failed=0

check() {  # check DESCRIPTION COMMAND...: passes when COMMAND succeeds
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $what" >&2
  fi
}

exit_code() {  # exit_code EXPECTED COMMAND...: runs COMMAND, compares its exit status
  local expected=$1
  shift
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  [ "$got" = "$expected" ] || { echo "exit $got, expected $expected: $*" >&2; cat "$work/err" >&2; return 1; }
}
