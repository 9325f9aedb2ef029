#!/usr/bin/env bash
# On a machine with a GPU: `kjit script tune` times each schedule of a real tuning space and stores
# the fastest as the dispatch table, which `kjit script table` then prints. REPS dependent
# multiply-adds per element: the schedule with the fewest (REPS=1) must win at both sizes.
# Usage: tests/gpu/script_tune.sh KJIT_CLI   (exit 0: the table is right; 1: it is not)
set -u
kjit=${1:?usage: script_tune.sh KJIT_CLI}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/busy.cu" <<'CU'
extern "C" __global__ void busy(float* out, int n)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) {
    return;
  }
  float v = static_cast<float>(i % 7);
  for (int r = 0; r < REPS; ++r) {
    v = v * 0.5f + 1.0f;
  }
  out[i] = v;
}
CU
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)
build=("$dir/busy.cu" --name busy --space REPS=1,4096 --space BLOCK=128,256 --sizes n --arch "sm_$arch"
       --cache-dir "$dir/cache")
status=0
"$kjit" script tune "${build[@]}" --at 65536 --at 1048576 --grid 'n/BLOCK' --block BLOCK \
  --arg 'buffer:n*4' --arg i32:n --kernel busy --repeat 5 || status=1
table=$("$kjit" script table busy --cache-dir "$dir/cache") || status=1
echo "$table"
# Each row's schedule must be one with REPS=1: schedules are numbered in the space's order
# (REPS slowest-varying), so 0 and 1 are REPS=1.
rows=$(grep -Ev '^#|^$' <<<"$table" | sed 's/ *#.*//')
[ "$(wc -l <<<"$rows")" = 2 ] || { echo "expected 2 rows"; status=1; }
while IFS= read -r row; do
  case ${row#*=} in
    0 | 1) ;;
    *) echo "row $row: a REPS=4096 schedule won"; status=1 ;;
  esac
done <<<"$rows"
exit "$status"
