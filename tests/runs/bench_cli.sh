#!/usr/bin/env bash
# kjit_bench's command line: --help prints the usage and runs nothing (exit 0); a missing option
# value, an unknown option, a bad number or an unknown section is an error with exit status 2.
# Usage: bench_cli.sh KJIT_BENCH
set -u
bench=$(realpath "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
failed=0

# expect STATUS PATTERN ARGS...: the exit status must be STATUS and stdout+stderr must match PATTERN.
expect() {
  local want=$1 pattern=$2
  shift 2
  timeout 60 "$bench" "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" != "$want" ] || ! grep -q -- "$pattern" out.txt err.txt; then
    echo "FAIL: kjit_bench $* exited $got (want $want), output lacks '$pattern':"
    cat out.txt err.txt
    failed=1
  fi
}

expect 0 "usage: kjit_bench" --help
if [ -e bench-results.json ] || grep -q "results written" out.txt; then
  echo "FAIL: kjit_bench --help started a run"
  failed=1
fi
grep -q "usage:" err.txt && { echo "FAIL: --help wrote its usage to stderr"; failed=1; }
expect 0 "usage: kjit_bench" -h
expect 2 "--json needs a value" --json
expect 2 "--scale needs a value" --scale
expect 2 "--only needs a value" --quick --only
expect 2 "--repetitions needs a value" --repetitions --quick
expect 2 "unknown option '--bogus'" --bogus
expect 2 "unknown option 'quick'" quick
expect 2 "--scale needs a positive number, not 'many'" --scale many
expect 2 "--repetitions needs a positive number, not '0'" --repetitions 0
expect 2 "--only: no section 'nosuch'" --only warm,nosuch
[ -e bench-results.json ] && { echo "FAIL: a bad command line started a run"; failed=1; }
exit $failed
