// A CUB block reduction; BLOCK comes from -D (docs/benchmarks.md, "Headers stored once").
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_reduce(const int* in, int* out)
{
  using Reduce = cub::BlockReduce<int, BLOCK>;
  __shared__ typename Reduce::TempStorage storage;
  const int sum = Reduce(storage).Sum(in[blockIdx.x * BLOCK + threadIdx.x]);
  if (threadIdx.x == 0) {
    out[blockIdx.x] = sum;
  }
}
