#!/usr/bin/env bash
# Fails on an #include that points up the layers of src/ (docs/ARCHITECTURE.md, "Layers"): a file
# of src/A/ may include src/B/ only where B's layer is below A's. Folders of one layer are
# independent of each other. Prints each offending line as file:line: A -> B.
# Usage: layers.sh [SRC_DIR]   (default: the src/ beside this script's folder)
set -u
src=${1:-$(dirname "$0")/../src}
# Lowest first; folders on one line share a layer.
layers=(
  "util"
  "config"
  "options"
  "rtc driver"
  "store"
  "deps mirror"
  "tier"
  "bundle remote"
  "cache"
  "batch script"
  "capi"
)
# Known upward includes, each to be removed: "file -> folder". None now.
known=()
declare -A rank
for i in "${!layers[@]}"; do
  for folder in ${layers[$i]}; do
    rank[$folder]=$i
  done
done
status=0
for dir in "$src"/*/; do
  folder=$(basename "$dir")
  if [ -z "${rank[$folder]+set}" ]; then
    echo "src/$folder/: a folder with no layer (add it to tests/layers.sh and docs/ARCHITECTURE.md)"
    status=1
    continue
  fi
  while IFS=: read -r file line text; do
    target=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^/"]+)\/.*/\1/' <<<"$text")
    [ "$target" = "$folder" ] && continue
    [ -z "${rank[$target]+set}" ] && continue  # not a src/ folder (a generated header)
    name="$folder/$(basename "$file")"
    if [ "${rank[$target]}" -ge "${rank[$folder]}" ]; then
      exempt=0
      for entry in "${known[@]}"; do
        [ "$entry" = "$name -> $target" ] && exempt=1
      done
      if [ "$exempt" = 0 ]; then
        echo "src/$name:$line: $folder -> $target (layer ${rank[$folder]} includes layer ${rank[$target]})"
        status=1
      fi
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^/"]+/' "$dir"*.cpp "$dir"*.hpp 2>/dev/null)
done
# A known exception that no longer happens is taken off the list.
for entry in "${known[@]}"; do
  file=${entry%% -> *} target=${entry##* -> }
  if ! grep -qE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"$target/" "$src/$file" 2>/dev/null; then
    echo "tests/layers.sh: '$entry' is listed as known but no longer happens: remove it"
    status=1
  fi
done
[ "$status" = 0 ] && echo "every #include in src/ points down the layers"
exit "$status"
