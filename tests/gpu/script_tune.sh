#!/usr/bin/env bash
# On a machine with a GPU: `kjit script tune` times each schedule of a real tuning space and stores
# the fastest as the dispatch table, which `kjit script table` then prints. The kernel copies n
# floats reading them STRIDE apart: the coalesced schedule (STRIDE=1) reads 8 floats per 32-byte
# sector, STRIDE=4099 one (8 times the sectors; 4 M and 16 M floats: 16 and 64 MB), and must win
# at both sizes.
# Usage: tests/gpu/script_tune.sh KJIT_CLI   (exit 0: the table is right; 1: it is not; 77: no GPU)
set -u
kjit=${1:?usage: script_tune.sh KJIT_CLI}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/gather.cu" <<'CU'
extern "C" __global__ void gather(const float* in, float* out, int n)
{
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[(i * STRIDE) % n];
}
CU
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
if [ -z "$arch" ]; then
  echo "no GPU (nvidia-smi names none)"
  exit 77
fi
build=("$dir/gather.cu" --name gather --space STRIDE=1,4099 --space BLOCK=128,256 --sizes n --arch "sm_$arch"
       --cache-dir "$dir/cache")
status=0
"$kjit" script tune "${build[@]}" --at 4194304 --at 16777216 --grid 'n/BLOCK' --block BLOCK \
  --arg 'buffer:n*4' --arg 'buffer:n*4' --arg i32:n --kernel gather --repeat 5 || status=1
table=$("$kjit" script table gather --cache-dir "$dir/cache") || status=1
echo "$table"
# Each row's schedule must be one with STRIDE=1: schedules are numbered in the space's order
# (STRIDE slowest-varying), so 0 and 1 are STRIDE=1.
rows=$(grep -Ev '^#|^$' <<<"$table" | sed 's/ *#.*//')
[ "$(wc -l <<<"$rows")" = 2 ] || { echo "expected 2 rows"; status=1; }
while IFS= read -r row; do
  case ${row#*=} in
    0 | 1) ;;
    *) echo "row $row: a STRIDE=4099 schedule won"; status=1 ;;
  esac
done <<<"$rows"
exit "$status"
