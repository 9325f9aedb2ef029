extern "C" __global__ void other(int* p) { p[0] = 8; }
