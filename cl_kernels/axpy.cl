// axpy.cl: the smallest real kernels; clg_device_selftest runs them through the whole
// path (embed, lazy build, binary cache, launch, read back).

// y[i] = a * x[i] + y[i] for i < n
__kernel void axpy(const int n, const T a, __global const T *x, __global T *y)
{
    int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}

// y[i] = value for i < n
__kernel void fill(const int n, const T value, __global T *y)
{
    int i = get_global_id(0);
    if (i < n) y[i] = value;
}
