#!/usr/bin/env bash
# docs/c-api.md's example is tested as the C++ snippets are: every line of the page's ```c blocks
# is a line of doc_example.c, which is built with -Werror and run as the page says: the first run
# compiles, a second process finds the kernel on disk.
# Usage: doc_example.sh DOC_EXAMPLE_BINARY DOC_PAGE EXAMPLE_SOURCE
set -u
binary=$1 page=$2 source=$3
status=0
in_c=0
lines=0
while IFS= read -r line; do
  if [[ $line == '```'* ]]; then
    [ "$in_c" = 0 ] && [ "$line" = '```c' ] && in_c=1 || in_c=0
    continue
  fi
  [ "$in_c" = 1 ] && [ -n "$line" ] || continue
  lines=$((lines + 1))
  if ! grep -qxF -- "$line" "$source"; then
    echo "$page: a line not in $source: $line"
    status=1
  fi
done <"$page"
if [ "$lines" -lt 40 ]; then
  echo "$page: only $lines lines of C found (is the example still there?)"
  status=1
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for expected in "from compiled" "from disk"; do
  out=$(KJIT_CACHE_DIR=$dir/cache "$binary" 2>&1)
  echo "$out"
  if [[ $out != *"saxpy for sm_90 $expected: "*" registers, 4 parameters in 28 bytes"* ]]; then
    echo "expected 'saxpy for sm_90 $expected: … 4 parameters in 28 bytes'"
    status=1
  fi
done
exit "$status"
