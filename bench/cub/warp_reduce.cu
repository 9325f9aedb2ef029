// A CUB warp reduction inside blocks of BLOCK threads (from -D).
#include <cub/warp/warp_reduce.cuh>
extern "C" __global__ void warp_reduce(const int* in, int* out)
{
  using Reduce = cub::WarpReduce<int>;
  __shared__ typename Reduce::TempStorage storage[BLOCK / 32];
  const int warp = threadIdx.x / 32;
  const int sum = Reduce(storage[warp]).Sum(in[blockIdx.x * BLOCK + threadIdx.x]);
  if (threadIdx.x % 32 == 0) {
    out[blockIdx.x * (BLOCK / 32) + warp] = sum;
  }
}
