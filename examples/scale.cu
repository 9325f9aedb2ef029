// A templated kernel: used through name expressions such as "scale<float>".
template <typename T>
__global__ void scale(T* x, T a, int n)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] *= a;
  }
}
