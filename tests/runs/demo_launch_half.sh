#!/usr/bin/env bash
# The demo where a GPU is needed or where it is packed, without either:
# 1. its launch half against the fake driver (tests/driver/fake), with the examples folder named by
#    an absolute path: the fake runs no kernel, so the results are wrong by design and the demo
#    stops after its cold launches; what must hold is that every example kernel was found (by file
#    name) and launched;
# 2. the demo and kjit-worker copied into one folder, as tools/gpu-pack packs them, with no driver:
#    the batch finds the worker beside the demo (no "cannot start the compile worker" warning);
# 3. the build's demo (build/examples/, no worker beside it), with no driver: libkjit finds the
#    worker where the build made it.
# Usage: demo_launch_half.sh KJIT_DEMO KJIT_WORKER EXAMPLES_DIR FAKE_LIBCUDA_DIR
set -u
demo=$1 worker=$2 examples=$3 fake=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
output=$(cd "$dir" && LD_LIBRARY_PATH=$fake KJIT_FAKE_CUDA_CC=90 KJIT_CACHE_DIR=$dir/fake \
         "$demo" "$examples" 2>&1)
for kernel in 'saxpy' 'scale<float>' 'scale<double>' 'half_axpy'; do
  if ! grep -qE "^  $kernel +65536 elements" <<<"$output"; then
    echo "FAIL: $kernel was not launched"
    status=1
  fi
done
if grep -q 'missing' <<<"$output"; then
  echo "FAIL: the demo reported a missing example"
  status=1
fi
[ "$status" = 0 ] || printf '%s\n' "$output"

mkdir "$dir/bin" && cp "$demo" "$worker" "$dir/bin/"
# The library path meson gives (libkjit's folder: the copies lose their relative rpath), less the fake.
libraries=$(tr ':' '\n' <<<"${LD_LIBRARY_PATH:-}" | grep -vxF "$fake" | paste -sd:)
output=$(cd "$dir" && LD_LIBRARY_PATH=$libraries KJIT_CACHE_DIR=$dir/packed "$dir/bin/$(basename "$demo")" "$examples" 2>&1)
demo_status=$?
if [ "$demo_status" != 0 ] || grep -q 'warning' <<<"$output"; then
  echo "FAIL: the packed demo exited $demo_status or warned"
  printf '%s\n' "$output"
  status=1
fi
output=$(cd "$dir" && LD_LIBRARY_PATH=$libraries KJIT_CACHE_DIR=$dir/built "$demo" "$examples" 2>&1)
demo_status=$?
if [ "$demo_status" != 0 ] || grep -q 'warning' <<<"$output"; then
  echo "FAIL: the build's demo exited $demo_status or warned"
  printf '%s\n' "$output"
  status=1
fi
exit "$status"
