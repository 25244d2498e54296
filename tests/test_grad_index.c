/* Gradient checks for indexing and joining: index_select (repeated indices),
 * gather, concat, stack, and split (whose parts are narrow views). */
#include <string.h>

#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)
#define IDX(vals, ...) {__VA_ARGS__, .constant = true, .values = (vals), .dtype = CLG_I32}

static clg_tensor *f_index_select(clg_tensor **x, void *c) { return clg_index_select(x[0], *(int *)c, x[1]); }
static clg_tensor *f_gather(clg_tensor **x, void *c) { return clg_gather(x[0], *(int *)c, x[1]); }
static clg_tensor *f_concat3(clg_tensor **x, void *c) { return clg_concat(3, x, *(int *)c); }
static clg_tensor *f_concat4(clg_tensor **x, void *c) { return clg_concat(4, x, *(int *)c); }
static clg_tensor *f_stack3(clg_tensor **x, void *c) { return clg_stack(3, x, *(int *)c); }
/* The same input twice: its two gradients add. */
static clg_tensor *f_stack_twice(clg_tensor **x, void *c)
{
    return clg_stack(2, (clg_tensor *[]){x[0], x[0]}, *(int *)c);
}
static clg_tensor *f_index_add(clg_tensor **x, void *c) { return clg_index_add(x[0], *(int *)c, x[1], x[2]); }
static clg_tensor *f_scatter_add(clg_tensor **x, void *c) { return clg_scatter_add(x[0], *(int *)c, x[1], x[2]); }
static clg_tensor *f_masked_fill(clg_tensor **x, void *c) { (void)c; return clg_masked_fill(x[0], x[1], 2.5); }
/* An embedding lookup feeding a product: the gradient flows back through the lookup. */
static clg_tensor *f_embed(clg_tensor **x, void *c)
{
    (void)c;
    return clg_mul(clg_index_select(x[0], 0, x[1]), clg_index_select(x[0], 0, x[2]));
}
/* Split into three parts and put them back in another order, one part used twice. */
static clg_tensor *f_split(clg_tensor **x, void *c)
{
    clg_tensor *p[3];
    if (clg_split(x[0], *(int *)c, 3, (const int64_t[]){2, 1, 2}, p) != CLG_OK) return NULL;
    return clg_concat(4, (clg_tensor *[]){p[2], p[0], p[1], p[2]}, *(int *)c);
}

/* index_select's backward gives the same bits whether the gradient is contiguous or a
 * transposed view (copied first): the sums add the same terms in the same order. */
static void embedding_backward_paths_agree(clg_device *dev)
{
    int32_t ids[40];
    for (int i = 0; i < 40; i++) ids[i] = (i * 7 + i / 3) % 9;   /* repeats, row 8 picked rarely */
    float grads[2][9 * 16];
    for (int v = 0; v < 2; v++) {
        clg_scope_begin(dev);
        clg_manual_seed(dev, 5);
        clg_tensor *w = clg_rand(dev, CLG_F32, SH(9, 16), -1, 1), *g = clg_rand(dev, CLG_F32, SH(16, 40), -1, 1);
        CHECK_OK(dev, clg_tensor_set_requires_grad(w, true));
        clg_tensor *y = clg_index_select(w, 0, clg_tensor_from_host(dev, CLG_I32, SH(40), ids));
        /* the same gradient values, contiguous or a transposed view */
        clg_tensor *gy = v ? clg_transpose(g, 0, 1) : clg_contiguous(clg_transpose(g, 0, 1));
        CHECK_OK(dev, clg_backward(y, gy));
        CHECK_OK(dev, clg_tensor_to_host(clg_tensor_grad(w), grads[v], sizeof grads[v]));
        clg_scope_end(dev);
    }
    CHECK_MSG(!memcmp(grads[0], grads[1], sizeof grads[0]), "index_select backward: row and element paths differ");
}

int main(void)
{
    clg_device *dev = check_open_device();
    embedding_backward_paths_agree(dev);
    int ax0 = 0, ax1 = 1, axm1 = -1;
    /* index_select: repeated rows add their gradients; unpicked rows get 0 */
    const double rows[6] = {4, 0, 4, 2, 4, 0};
    optest_gradcheck(dev, "index_select axis 0 repeated", f_index_select, &ax0, 2,
                     IN({SH(5, 3)}, IDX(rows, SH(6))));
    const double cols[4] = {3, 3, 0, 1};
    optest_gradcheck(dev, "index_select axis 1", f_index_select, &ax1, 2, IN({SH(2, 4, 3)}, IDX(cols, SH(4))));
    const double last[5] = {1, 0, 1, 1, 2};
    optest_gradcheck(dev, "index_select axis -1", f_index_select, &axm1, 2, IN({SH(2, 2, 3)}, IDX(last, SH(5))));
    const double ids_a[3] = {1, 3, 1}, ids_b[3] = {1, 0, 2};
    optest_gradcheck(dev, "embedding product", f_embed, NULL, 3,
                     IN({SH(4, 2)}, IDX(ids_a, SH(3)), IDX(ids_b, SH(3))));
    /* index_add, scatter_add: repeated positions; masked_fill: masked-out elements get 0 */
    optest_gradcheck(dev, "index_add axis 0 repeated", f_index_add, &ax0, 3,
                     IN({SH(5, 3)}, IDX(rows, SH(6)), {SH(6, 3)}));
    const double sc[6] = {2, 0, 2, 1, 1, 1};
    optest_gradcheck(dev, "scatter_add axis 1 repeated", f_scatter_add, &ax1, 3,
                     IN({SH(2, 4)}, IDX(sc, SH(2, 3)), {SH(2, 3)}));
    const double mk[3] = {1, 0, 1};
    optest_gradcheck(dev, "masked_fill", f_masked_fill, NULL, 2,
                     IN({SH(2, 3)}, {SH(3), .constant = true, .values = mk, .dtype = CLG_I32}));
    /* gather: torch semantics, repeats along the axis, an index smaller than the input */
    const double g1[15] = {0, 3, 3, 1, 0, 2, 2, 2, 2, 1, 3, 0, 1, 2, 3};
    optest_gradcheck(dev, "gather axis 1 repeated", f_gather, &ax1, 2, IN({SH(3, 4)}, IDX(g1, SH(3, 5))));
    const double g0[6] = {3, 0, 3, 1, 1, 2};
    optest_gradcheck(dev, "gather axis 0 smaller index", f_gather, &ax0, 2, IN({SH(4, 4)}, IDX(g0, SH(2, 3))));
    const double gm[8] = {1, 0, 1, 1, 0, 0, 1, 0};
    optest_gradcheck(dev, "gather axis -1 3-D", f_gather, &axm1, 2, IN({SH(2, 2, 3)}, IDX(gm, SH(2, 2, 2))));
    /* concat and stack: each input gets its part of the gradient */
    optest_gradcheck(dev, "concat axis 0", f_concat3, &ax0, 3, IN({SH(2, 3)}, {SH(1, 3)}, {SH(3, 3)}));
    optest_gradcheck(dev, "concat axis -1", f_concat3, &axm1, 3, IN({SH(2, 1)}, {SH(2, 3)}, {SH(2, 2)}));
    optest_gradcheck(dev, "concat four inputs axis 1", f_concat4, &ax1, 4,
                     IN({SH(2, 2)}, {SH(2, 1)}, {SH(2, 3), .constant = true}, {SH(2, 2)}));
    optest_gradcheck(dev, "stack axis 0", f_stack3, &ax0, 3, IN({SH(2, 3)}, {SH(2, 3)}, {SH(2, 3)}));
    optest_gradcheck(dev, "stack axis -1", f_stack3, &axm1, 3,
                     IN({SH(3, 2)}, {SH(3, 2), .constant = true}, {SH(3, 2)}));
    optest_gradcheck(dev, "stack same input twice", f_stack_twice, &ax1, 1, IN({SH(2, 3)}));
    /* split: the parts are narrow views */
    optest_gradcheck(dev, "split axis 0", f_split, &ax0, 1, IN({SH(5, 2)}));
    optest_gradcheck(dev, "split axis -1", f_split, &axm1, 1, IN({SH(2, 5)}));
    clg_device_close(dev);
    return check_report("test_grad_index");
}
