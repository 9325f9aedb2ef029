#!/usr/bin/env bash
# Runs a command with KJIT_CACHE_DIR set to a fresh temporary folder (removed after), in that
# folder; the word @CACHE@ in the arguments is replaced by the folder. Exits with the command's status.
# Usage: in_temp_cache.sh COMMAND [ARGS...]
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export KJIT_CACHE_DIR=$dir/cache
args=()
for arg in "$@"; do
  args+=("${arg//@CACHE@/$dir/cache}")
done
cd "$dir" && "${args[@]}"
