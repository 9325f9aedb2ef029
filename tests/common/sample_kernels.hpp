// Kernel sources shared by the unit and GPU tests.
#pragma once

namespace kjit::test {

inline const char* const k_saxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

inline const char* const k_scale = R"(
template <typename T>
__global__ void scale(T* x, T a, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
)";

} // namespace kjit::test
