#!/usr/bin/env bash
# Fails unless the suites meson runs one by one (arguments 2…) are exactly the unit executable's
# top-level Boost.Test suites (argument 1), each named once: no suite skipped, none run twice.
set -euo pipefail
binary=$1
shift
duplicates=$(printf '%s\n' "$@" | sort | uniq -d)
if [ -n "$duplicates" ]; then
  echo "suites named twice: $duplicates" >&2
  exit 1
fi
listed=$(printf '%s\n' "$@" | sort)
# --list_content prints "name*" lines to stderr; a top-level suite has no indentation.
actual=$("$binary" --list_content 2>&1 >/dev/null | grep -E '^[A-Za-z0-9_]+\*?$' | tr -d '*' | sort)
if [ "$listed" != "$actual" ]; then
  echo "the meson split of unit_tests does not match its suites:" >&2
  diff <(echo "$listed") <(echo "$actual") >&2 || true
  exit 1
fi
echo "$# suites, each run once"
