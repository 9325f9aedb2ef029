# Sourced by the vendored-CCCL benchmarks: in the current folder, the toolkit's include/cccl
# copied as `vendor` (how projects pin a CCCL version, passed with -I vendor) unless it is there,
# `br.cu` (a cub::BlockReduce kernel), `br2.cu` (another kernel of the same headers), `br3.cu` (one
# that also includes a header of its own, `my.h`) and `out/`.
[ -d vendor ] || cp -r "${CUDA_HOME:-/usr/local/cuda}/include/cccl" vendor
mkdir -p out
cat >br.cu <<'CU'
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void br(const int* in, int* out) {
  using R = cub::BlockReduce<int, 128>;
  __shared__ typename R::TempStorage tmp;
  int v = R(tmp).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) *out = v;
}
CU
sed 's/Sum(in\[threadIdx.x\])/Sum(in[threadIdx.x] * 3)/' br.cu >br2.cu
{ echo '#include "my.h"'; sed 's/Sum(in\[threadIdx.x\])/Sum(in[threadIdx.x] * MY_FACTOR)/' br.cu; } >br3.cu
echo '#define MY_FACTOR 1' >my.h
