extern "C" __global__ void wt(int* p) { p[0] = 7; }
