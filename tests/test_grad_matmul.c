/* Gradient checks for matmul (2-D, vectors, batched with broadcasting, transposed
 * views) and linear (with and without bias, 3-D input). */
#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

static clg_tensor *f_mm(clg_tensor **x, void *c) { (void)c; return clg_matmul(x[0], x[1]); }
static clg_tensor *f_mm_t(clg_tensor **x, void *c)
{
    (void)c;   /* a^T @ b^T through transposed views */
    return clg_matmul(clg_transpose(x[0], 0, 1), clg_transpose(x[1], -1, -2));
}
static clg_tensor *f_linear(clg_tensor **x, void *c) { (void)c; return clg_linear(x[0], x[1], x[2]); }
static clg_tensor *f_linear_nobias(clg_tensor **x, void *c) { (void)c; return clg_linear(x[0], x[1], NULL); }

int main(void)
{
    clg_device *dev = check_open_device();
    optest_gradcheck(dev, "matmul 2d", f_mm, NULL, 2, IN({SH(3, 4)}, {SH(4, 5)}));
    optest_gradcheck(dev, "matmul transposed views", f_mm_t, NULL, 2, IN({SH(4, 3)}, {SH(2, 4)}));
    optest_gradcheck(dev, "matmul vector-matrix", f_mm, NULL, 2, IN({SH(4)}, {SH(4, 3)}));
    optest_gradcheck(dev, "matmul matrix-vector", f_mm, NULL, 2, IN({SH(3, 4)}, {SH(4)}));
    optest_gradcheck(dev, "matmul dot", f_mm, NULL, 2, IN({SH(5)}, {SH(5)}));
    optest_gradcheck(dev, "matmul batched", f_mm, NULL, 2, IN({SH(2, 3, 4)}, {SH(2, 4, 2)}));
    optest_gradcheck(dev, "matmul batch broadcast", f_mm, NULL, 2, IN({SH(2, 1, 3, 4)}, {SH(3, 4, 2)}));
    optest_gradcheck(dev, "linear", f_linear, NULL, 3, IN({SH(4, 3)}, {SH(5, 3)}, {SH(5)}));
    optest_gradcheck(dev, "linear 3d input", f_linear, NULL, 3, IN({SH(2, 2, 3)}, {SH(4, 3)}, {SH(4)}));
    optest_gradcheck(dev, "linear no bias", f_linear_nobias, NULL, 2, IN({SH(3, 6)}, {SH(2, 6)}));
    clg_device_close(dev);
    return check_report("test_grad_matmul");
}
