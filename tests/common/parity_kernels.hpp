// Kernels whose relocatable (PTX → nvJitLink) cubin is worse than a whole-program one: warp votes,
// float division, __syncthreads, templates through name expressions, a CUB block reduction.
// Shared by the compile-path tests and the benchmark's code parity table.
#pragma once

#include <kjit/program.hpp>

namespace kjit::test {

// Kernels where a relocatable (PTX → nvJitLink) cubin differs from a whole-program one.
inline const char* const k_parity = R"(
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void votes(const int* in, int* out)
{
  const int v = in[threadIdx.x];
  out[threadIdx.x] = __all_sync(0xffffffff, v > 0) + 2 * __any_sync(0xffffffff, v < 0) + __popc(__ballot_sync(~0u, v));
}
extern "C" __global__ void divide(const float* a, const float* b, float* out)
{
  out[threadIdx.x] = a[threadIdx.x] / b[threadIdx.x];
}
extern "C" __global__ void tiled(const float* a, float* out)
{
  __shared__ float tile[256];
  tile[threadIdx.x] = a[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = tile[255 - threadIdx.x] * 2.0f;
}
template <typename T, int N> __global__ void axpy_n(T a, const T* x, T* y)
{
  for (int i = 0; i < N; ++i) y[threadIdx.x * N + i] += a * x[threadIdx.x * N + i];
}
extern "C" __global__ void block_sum(const int* in, int* out)
{
  using Reduce = cub::BlockReduce<int, 128>;
  __shared__ typename Reduce::TempStorage storage;
  const int sum = Reduce(storage).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}
)";

inline kjit::Program parity_program()
{
  return {"parity.cu", k_parity, {}, {"-std=c++17"}, {"axpy_n<float, 4>", "axpy_n<double, 2>"}};
}

} // namespace kjit::test
