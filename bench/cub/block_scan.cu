// A CUB block prefix sum; BLOCK comes from -D.
#include <cub/block/block_scan.cuh>
extern "C" __global__ void block_scan(const int* in, int* out)
{
  using Scan = cub::BlockScan<int, BLOCK>;
  __shared__ typename Scan::TempStorage storage;
  int value = in[blockIdx.x * BLOCK + threadIdx.x];
  Scan(storage).InclusiveSum(value, value);
  out[blockIdx.x * BLOCK + threadIdx.x] = value;
}
