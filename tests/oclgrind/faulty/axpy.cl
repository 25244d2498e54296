// axpy and fill as cl_kernels/axpy.cl, each with a defect Oclgrind must report:
// axpy reads far past the end of x, and every work-item of fill writes y[0] with its
// own value (a data race).
__kernel void axpy(const int n, const T a, __global const T *x, __global T *y)
{
    int i = get_global_id(0);
    if (i < n) y[i] = a * x[i + (i == n - 1 ? 1 << 24 : 0)] + y[i];
}

__kernel void fill(const int n, const T value, __global T *y)
{
    int i = get_global_id(0);
    if (i < n) y[i == 5 ? 0 : i] = value + (T)i;
}
