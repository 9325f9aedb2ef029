// A CUB block radix sort of 4 keys per thread; BLOCK comes from -D.
#include <cub/block/block_radix_sort.cuh>
extern "C" __global__ void block_radix_sort(int* keys)
{
  using Sort = cub::BlockRadixSort<int, BLOCK, 4>;
  __shared__ typename Sort::TempStorage storage;
  int items[4];
  for (int i = 0; i < 4; ++i) {
    items[i] = keys[(blockIdx.x * BLOCK + threadIdx.x) * 4 + i];
  }
  Sort(storage).Sort(items);
  for (int i = 0; i < 4; ++i) {
    keys[(blockIdx.x * BLOCK + threadIdx.x) * 4 + i] = items[i];
  }
}
