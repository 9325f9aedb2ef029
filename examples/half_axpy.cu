// Half-precision axpy using cuda_fp16.h and cuda/std: toolkit headers need no -I.
#include <cuda_fp16.h>
#include <cuda/std/cstdint>

extern "C" __global__ void half_axpy(__half a, const __half* x, __half* y, cuda::std::int32_t n)
{
  const cuda::std::int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = __hfma(a, x[i], y[i]);
  }
}
