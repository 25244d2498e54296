/* index_select, gather, concat, stack and split against plain-C references: every
 * dtype, inputs in contiguous, permuted and sliced layouts, sizes around the work
 * group size, zero-size tensors, repeated and out-of-range indices, and the errors. */
#include <math.h>
#include <string.h>

#include "optest.h"
#include "tensor_impl.h"

#define MAXN 40000

static clg_dtype dtypes[3];
static int ndtypes;

/* ---- plain-C helpers over row-major doubles ------------------------------------------------------- */

static int64_t numel_of(int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    return n;
}

static void unravel(int64_t i, int nd, const int64_t *shape, int64_t *c)
{
    for (int d = nd - 1; d >= 0; d--) {
        c[d] = i % shape[d];
        i /= shape[d];
    }
}

static int64_t ravel(int nd, const int64_t *shape, const int64_t *c)
{
    int64_t o = 0;
    for (int d = 0; d < nd; d++) o = o * shape[d] + c[d];
    return o;
}

/* Integers in [-50, 50): exact in every dtype, so results compare with tolerance 0. */
static void fill_ints(double *v, int64_t n, uint64_t seed)
{
    optest_fill(v, n, -50, 50, seed);
    for (int64_t i = 0; i < n; i++) v[i] = floor(v[i]);
}

static void fill_indices(double *v, int64_t n, int64_t hi, uint64_t seed)
{
    optest_fill(v, n, 0, (double)hi, seed);
    for (int64_t i = 0; i < n; i++) v[i] = floor(v[i]);
}

static double bad_value(clg_dtype dt) { return dt == CLG_I32 ? 0.0 : NAN; }

static const char *what(char *buf, size_t len, const char *op, const char *name, clg_dtype dt, int layout)
{
    snprintf(buf, len, "%s %s %s %s", op, name, clg_dtype_name(dt), optest_layout_names[layout]);
    return buf;
}

/* ---- index_select ----------------------------------------------------------------------------------- */

static void ref_index_select(int nd, const int64_t *shape, int ax, const double *a, int64_t k, const double *idx,
                             clg_dtype dt, double *out)
{
    int64_t os[CLG_MAX_DIMS], c[CLG_MAX_DIMS];
    memcpy(os, shape, (size_t)nd * sizeof *os);
    os[ax] = k;
    for (int64_t i = 0; i < numel_of(nd, os); i++) {
        unravel(i, nd, os, c);
        int64_t j = (int64_t)idx[c[ax]];
        if (j < 0 || j >= shape[ax]) {
            out[i] = bad_value(dt);
            continue;
        }
        c[ax] = j;
        out[i] = a[ravel(nd, shape, c)];
    }
}

/* Whether any of the n indices falls outside [0, bound). */
static bool any_out(const double *idx, int64_t n, int64_t bound)
{
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= (double)bound) return true;
    return false;
}

/* The first read of y fails, naming the op (fn): an index out of range that a kernel
 * found. It is reported once: the caller's later reads succeed. */
static void read_fails(clg_device *dev, const char *w, const char *fn, clg_tensor *y)
{
    double *r = optest_read(y);
    CHECK_MSG(!r && strstr(clg_device_error(dev), fn) && strstr(clg_device_error(dev), "found on the device"),
              "%s: the read after out-of-range indices: %s", w, clg_device_error(dev));
    free(r);
    clg_device_clear_error(dev);
}

/* Out-of-range indices. Exactly as clg_tensor_from_host wrote them (whole: the index
 * tensor is that one, not a view of part of it), the op refuses them at once, naming the
 * op, the value and its position (y_host NULL). A view of them, and indices made on the
 * device (y_dev, from a cast), are the kernel's to find: the op runs and the first read
 * after it fails, once (the device keeps the first finding of both ops, so with a view
 * only y_host's read fails); the result holds NaN (0 for int32) there. Returns y_dev
 * for the caller to compare. */
static clg_tensor *out_of_range(clg_device *dev, const char *w, const char *op, bool whole, clg_tensor *y_host,
                                clg_tensor *y_dev)
{
    char fn[64];
    snprintf(fn, sizeof fn, "clg_%s", op);
    if (whole)
        CHECK_MSG(!y_host && strstr(clg_device_error(dev), fn) && strstr(clg_device_error(dev), "out of range") &&
                      strstr(clg_device_error(dev), "(element "), "%s: host-made indices: %s", w, clg_device_error(dev));
    else
        CHECK_MSG(y_host != NULL, "%s: a view of host-made indices refused: %s", w, clg_device_error(dev));
    clg_device_clear_error(dev);
    CHECK_MSG(y_dev != NULL, "%s: device-made indices: %s", w, clg_device_error(dev));
    read_fails(dev, w, fn, whole ? y_dev : y_host);
    return y_dev;
}

/* idx NULL: k random indices (with repeats) into the axis. */
static void check_index_select(clg_device *dev, const char *name, int nd, const int64_t *shape, int axis, int64_t k,
                               const double *idx_given)
{
    static double a[MAXN], idx[MAXN], want[MAXN];
    int ax = axis < 0 ? axis + nd : axis;
    int64_t n = numel_of(nd, shape);
    fill_ints(a, n, 11);
    if (idx_given) memcpy(idx, idx_given, (size_t)k * sizeof *idx);
    else fill_indices(idx, k, shape[ax], 5);
    for (int di = 0; di < ndtypes; di++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char w[256];
            what(w, sizeof w, "index_select", name, dtypes[di], l);
            clg_tensor *ta = optest_tensor(dev, dtypes[di], nd, shape, a, (optest_layout)l);
            /* indices strided too, every other layout */
            optest_layout il = l == 1 ? OPTEST_SLICED : OPTEST_CONTIGUOUS;
            clg_tensor *ti = optest_tensor(dev, CLG_I32, CLG_SHAPE(k), idx, il);
            clg_tensor *y = clg_index_select(ta, axis, ti);
            if (any_out(idx, k, shape[ax]))
                y = out_of_range(dev, w, "index_select", il == OPTEST_CONTIGUOUS, y,
                                 clg_index_select(ta, axis, clg_cast(optest_tensor(dev, CLG_F32, CLG_SHAPE(k), idx, il), CLG_I32)));
            CHECK_MSG(y != NULL, "%s: %s", w, clg_device_error(dev));
            ref_index_select(nd, shape, ax, a, k, idx, dtypes[di], want);
            if (y) {
                CHECK_MSG(clg_tensor_ndim(y) == nd && clg_tensor_dim(y, ax) == k, "%s: shape", w);
                CHECK_MSG(clg_tensor_dtype(y) == dtypes[di], "%s: dtype", w);
                int64_t os[CLG_MAX_DIMS];
                memcpy(os, shape, (size_t)nd * sizeof *os);
                os[ax] = k;
                optest_close(w, y, want, numel_of(nd, os), 0, 0);
            }
            clg_scope_end(dev);
        }
}

static void test_index_select(clg_device *dev)
{
    check_index_select(dev, "[7,33] axis 0", CLG_SHAPE(7, 33), 0, 10, NULL);
    check_index_select(dev, "[7,33] axis 1", CLG_SHAPE(7, 33), 1, 40, NULL);
    check_index_select(dev, "[4,5,6] axis -1", CLG_SHAPE(4, 5, 6), -1, 9, NULL);
    check_index_select(dev, "[4,5,6] axis 1", CLG_SHAPE(4, 5, 6), 1, 7, NULL);
    /* rows at least 16 wide of a contiguous input (index_select_rows): blocks and rows */
    check_index_select(dev, "[3,5,20] axis 1", CLG_SHAPE(3, 5, 20), 1, 11, NULL);
    check_index_select(dev, "[50,16] axis 0 k 300", CLG_SHAPE(50, 16), 0, 300, NULL);
    check_index_select(dev, "[1,1] axis 0 repeated", CLG_SHAPE(1, 1), 0, 3, (const double[]){0, 0, 0});
    check_index_select(dev, "[1000,3] axis 0 k 1037", CLG_SHAPE(1000, 3), 0, 1037, NULL);
    check_index_select(dev, "[3,1000] axis -1 k 1", CLG_SHAPE(3, 1000), -1, 1, (const double[]){999});
    check_index_select(dev, "[2,1000] axis 1 k 1000", CLG_SHAPE(2, 1000), 1, 1000, NULL);
    /* labels: 1-D int32 tables as well as floats (dtypes loop) */
    check_index_select(dev, "[33] axis 0", CLG_SHAPE(33), 0, 1000, NULL);
    /* zero-size: no indices, an empty table picked by none, empty rows */
    check_index_select(dev, "[7,33] k 0", CLG_SHAPE(7, 33), 0, 0, NULL);
    check_index_select(dev, "[0,5] axis 0 k 0", CLG_SHAPE(0, 5), 0, 0, NULL);
    check_index_select(dev, "[7,0] axis 0", CLG_SHAPE(7, 0), 0, 4, (const double[]){6, 0, 6, 1});
    /* out of range, both ends: refused when made on the host; made on the device, NaN (0
     * for int32) rows, an error at the next read, and nothing read or written outside */
    check_index_select(dev, "[7,33] out of range", CLG_SHAPE(7, 33), 0, 5,
                       (const double[]){-1, 7, 2, 1000000, -2147483647.0});
    check_index_select(dev, "[0,3] out of range", CLG_SHAPE(0, 3), 0, 2, (const double[]){0, -1});
}

/* ---- gather ------------------------------------------------------------------------------------------ */

static void ref_gather(int nd, const int64_t *shape, int ax, const double *a, const int64_t *ishape,
                       const double *idx, clg_dtype dt, double *out)
{
    int64_t c[CLG_MAX_DIMS];
    for (int64_t i = 0; i < numel_of(nd, ishape); i++) {
        unravel(i, nd, ishape, c);
        int64_t j = (int64_t)idx[i];
        if (j < 0 || j >= shape[ax]) {
            out[i] = bad_value(dt);
            continue;
        }
        c[ax] = j;
        out[i] = a[ravel(nd, shape, c)];
    }
}

static void check_gather(clg_device *dev, const char *name, int nd, const int64_t *shape, int axis,
                         const int64_t *ishape, const double *idx_given)
{
    static double a[MAXN], idx[MAXN], want[MAXN];
    int ax = axis < 0 ? axis + nd : axis;
    int64_t n = numel_of(nd, shape), ni = numel_of(nd, ishape);
    fill_ints(a, n, 13);
    if (idx_given) memcpy(idx, idx_given, (size_t)ni * sizeof *idx);
    else fill_indices(idx, ni, shape[ax], 17);
    for (int di = 0; di < ndtypes; di++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char w[256];
            what(w, sizeof w, "gather", name, dtypes[di], l);
            clg_tensor *ta = optest_tensor(dev, dtypes[di], nd, shape, a, (optest_layout)l);
            optest_layout il = (optest_layout)((l + 1) % OPTEST_LAYOUT_COUNT);
            clg_tensor *ti = optest_tensor(dev, CLG_I32, nd, ishape, idx, il);
            clg_tensor *y = clg_gather(ta, axis, ti);
            if (any_out(idx, ni, shape[ax]))
                y = out_of_range(dev, w, "gather", il == OPTEST_CONTIGUOUS, y,
                                 clg_gather(ta, axis, clg_cast(optest_tensor(dev, CLG_F32, nd, ishape, idx, il), CLG_I32)));
            CHECK_MSG(y != NULL, "%s: %s", w, clg_device_error(dev));
            ref_gather(nd, shape, ax, a, ishape, idx, dtypes[di], want);
            if (y) {
                CHECK_MSG(clg_tensor_ndim(y) == nd && !memcmp(clg_tensor_shape(y), ishape, (size_t)nd * sizeof *ishape),
                          "%s: shape", w);
                optest_close(w, y, want, ni, 0, 0);
            }
            clg_scope_end(dev);
        }
}

static void test_gather(clg_device *dev)
{
    check_gather(dev, "[7,33] axis 1", CLG_SHAPE(7, 33), 1, (const int64_t[]){7, 5}, NULL);
    check_gather(dev, "[7,33] axis 0 taller index", CLG_SHAPE(7, 33), 0, (const int64_t[]){12, 33}, NULL);
    check_gather(dev, "[3,4,5] axis -1 smaller index", CLG_SHAPE(3, 4, 5), -1, (const int64_t[]){2, 4, 9}, NULL);
    check_gather(dev, "[3,4,5] axis 1", CLG_SHAPE(3, 4, 5), 1, (const int64_t[]){3, 1, 5}, NULL);
    check_gather(dev, "[1,1] axis 0", CLG_SHAPE(1, 1), 0, (const int64_t[]){1, 1}, (const double[]){0});
    /* cross-entropy's pick: [N, C] logits, one label per row */
    check_gather(dev, "[1037,10] axis 1 labels", CLG_SHAPE(1037, 10), 1, (const int64_t[]){1037, 1}, NULL);
    check_gather(dev, "[1000,3] axis 0", CLG_SHAPE(1000, 3), 0, (const int64_t[]){1300, 3}, NULL);
    check_gather(dev, "[4,0] zero-size", CLG_SHAPE(4, 0), 1, (const int64_t[]){4, 0}, NULL);
    check_gather(dev, "[4,3] empty index", CLG_SHAPE(4, 3), 0, (const int64_t[]){0, 3}, NULL);
    check_gather(dev, "[2,3] out of range", CLG_SHAPE(2, 3), 1, (const int64_t[]){2, 3},
                 (const double[]){-1, 3, 2, 1000000, 0, -2147483647.0});
}

/* ---- concat and stack ----------------------------------------------------------------------------------- */

/* Reference concat (stack: every part gets a new size-1 axis at ax, same thing). */
static void ref_concat(int n, int nd, int64_t (*shapes)[CLG_MAX_DIMS], double **vals, int ax, double *out,
                       int64_t *oshape)
{
    memcpy(oshape, shapes[0], (size_t)nd * sizeof *oshape);
    oshape[ax] = 0;
    for (int i = 0; i < n; i++) oshape[ax] += shapes[i][ax];
    int64_t c[CLG_MAX_DIMS];
    for (int64_t e = 0; e < numel_of(nd, oshape); e++) {
        unravel(e, nd, oshape, c);
        int i = 0;
        while (c[ax] >= shapes[i][ax]) c[ax] -= shapes[i++][ax];
        out[e] = vals[i][ravel(nd, shapes[i], c)];
    }
}

/* n parts of shape `shape` with sizes[i] along axis (stack: sizes ignored, parts equal). */
static void check_join(clg_device *dev, const char *name, bool stack, int n, int nd, const int64_t *shape,
                       const int64_t *sizes, int axis)
{
    static double store[4][MAXN], want[MAXN];
    double *vals[4];
    int64_t shapes[4][CLG_MAX_DIMS], rshapes[4][CLG_MAX_DIMS], oshape[CLG_MAX_DIMS];
    int ond = stack ? nd + 1 : nd;
    int ax = axis < 0 ? axis + ond : axis;
    for (int i = 0; i < n; i++) {
        memcpy(shapes[i], shape, (size_t)nd * sizeof *shape);
        if (!stack) shapes[i][ax] = sizes[i];
        /* the reference's view of part i: stack inserts a size-1 axis */
        for (int d = 0, s = 0; d < ond; d++) rshapes[i][d] = stack && d == ax ? 1 : shapes[i][s++];
        vals[i] = store[i];
        fill_ints(vals[i], numel_of(nd, shapes[i]), 21 + (uint64_t)i);
    }
    ref_concat(n, ond, rshapes, vals, ax, want, oshape);
    for (int di = 0; di < ndtypes; di++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char w[256];
            what(w, sizeof w, stack ? "stack" : "concat", name, dtypes[di], l);
            clg_tensor *ts[4];
            /* mixed layouts: part i in layout (l + i) % 3 */
            for (int i = 0; i < n; i++)
                ts[i] = optest_tensor(dev, dtypes[di], nd, shapes[i], vals[i], (optest_layout)((l + i) % OPTEST_LAYOUT_COUNT));
            clg_tensor *y = stack ? clg_stack(n, ts, axis) : clg_concat(n, ts, axis);
            CHECK_MSG(y != NULL, "%s: %s", w, clg_device_error(dev));
            if (y) {
                CHECK_MSG(clg_tensor_ndim(y) == ond && !memcmp(clg_tensor_shape(y), oshape, (size_t)ond * sizeof *oshape),
                          "%s: shape", w);
                optest_close(w, y, want, numel_of(ond, oshape), 0, 0);
            }
            clg_scope_end(dev);
        }
}

static void test_concat_stack(clg_device *dev)
{
    check_join(dev, "[k,33] axis 0", false, 3, CLG_SHAPE(0, 33), (const int64_t[]){7, 1, 3}, 0);
    check_join(dev, "[7,k] axis 1", false, 2, CLG_SHAPE(7, 0), (const int64_t[]){5, 33}, 1);
    check_join(dev, "[2,3,k] axis -1", false, 4, CLG_SHAPE(2, 3, 0), (const int64_t[]){1, 4, 2, 7}, -1);
    check_join(dev, "[k] 1000+37", false, 2, CLG_SHAPE(0), (const int64_t[]){1000, 37}, 0);
    check_join(dev, "[k,3] 1000+1 axis 0", false, 2, CLG_SHAPE(0, 3), (const int64_t[]){1000, 1}, 0);
    check_join(dev, "[k,2] one part", false, 1, CLG_SHAPE(0, 2), (const int64_t[]){7}, 0);
    check_join(dev, "zero-size part", false, 3, CLG_SHAPE(0, 4), (const int64_t[]){2, 0, 3}, 0);
    check_join(dev, "all zero-size", false, 2, CLG_SHAPE(3, 0), (const int64_t[]){0, 0}, 1);
    check_join(dev, "[7,33] axis 0", true, 3, CLG_SHAPE(7, 33), NULL, 0);
    check_join(dev, "[7,33] axis 1", true, 2, CLG_SHAPE(7, 33), NULL, 1);
    check_join(dev, "[7,33] axis -1", true, 4, CLG_SHAPE(7, 33), NULL, -1);
    check_join(dev, "[1037] axis 0", true, 2, CLG_SHAPE(1037), NULL, 0);
    check_join(dev, "[1,1] axis 1", true, 1, CLG_SHAPE(1, 1), NULL, 1);
    check_join(dev, "[0,3] axis 1", true, 2, CLG_SHAPE(0, 3), NULL, 1);
}

/* ---- split ------------------------------------------------------------------------------------------------- */

static void test_split(clg_device *dev)
{
    double a[10 * 7];
    fill_ints(a, 70, 31);
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_scope_begin(dev);
        clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(10, 7), a, (optest_layout)l);
        clg_tensor *out[3];
        CHECK_OK(dev, clg_split(t, 0, 3, (const int64_t[]){3, 0, 7}, out));
        CHECK(out[0] && clg_tensor_dim(out[0], 0) == 3 && out[1] && clg_tensor_numel(out[1]) == 0 && out[2] &&
              clg_tensor_dim(out[2], 0) == 7);
        if (out[0] && out[2]) {
            optest_close("split axis 0 part 0", out[0], a, 21, 0, 0);
            optest_close("split axis 0 part 2", out[2], a + 21, 49, 0, 0);
            /* views: they share the input's buffer */
            CHECK(out[0]->buf == t->buf && out[2]->buf == t->buf);
        }
        CHECK_OK(dev, clg_split(t, -1, 2, (const int64_t[]){2, 5}, out));
        double w0[20], w1[50];
        for (int r = 0; r < 10; r++)
            for (int c = 0; c < 7; c++) {
                if (c < 2) w0[r * 2 + c] = a[r * 7 + c];
                else w1[r * 5 + c - 2] = a[r * 7 + c];
            }
        if (out[0] && out[1]) {
            optest_close("split axis -1 part 0", out[0], w0, 20, 0, 0);
            optest_close("split axis -1 part 1", out[1], w1, 50, 0, 0);
        }
        clg_scope_end(dev);
    }
}

/* ---- errors ------------------------------------------------------------------------------------------------- */

static void expect_error(clg_device *dev, const char *case_name, bool failed, const char *text)
{
    CHECK_MSG(failed, "%s: no error", case_name);
    CHECK_MSG(strstr(clg_device_error(dev), text) != NULL, "%s: error '%s' lacks '%s'", case_name,
              clg_device_error(dev), text);
    clg_device_clear_error(dev);
}

static void test_errors(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *a = clg_zeros(dev, CLG_F32, CLG_SHAPE(4, 3));
    clg_tensor *b = clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 5));
    clg_tensor *ai = clg_zeros(dev, CLG_I32, CLG_SHAPE(4, 3));
    clg_tensor *fidx = clg_zeros(dev, CLG_F32, CLG_SHAPE(2));
    clg_tensor *idx2 = clg_zeros(dev, CLG_I32, CLG_SHAPE(2, 1));
    clg_tensor *idx1 = clg_zeros(dev, CLG_I32, CLG_SHAPE(2));
    clg_tensor *s = clg_scalar(dev, CLG_F32, 1.0);

    expect_error(dev, "index_select float indices", !clg_index_select(a, 0, fidx),
                 "clg_index_select: indices must be int32");
    expect_error(dev, "index_select 2-D indices", !clg_index_select(a, 0, idx2),
                 "clg_index_select: indices must have 1 axes");
    expect_error(dev, "index_select axis", !clg_index_select(a, 2, idx1), "clg_index_select: axis 2 out of range");
    expect_error(dev, "index_select scalar", !clg_index_select(s, 0, idx1), "clg_index_select");
    expect_error(dev, "gather float index", !clg_gather(a, 1, clg_zeros(dev, CLG_F32, CLG_SHAPE(4, 1))),
                 "clg_gather: indices must be int32");
    expect_error(dev, "gather index ndim", !clg_gather(a, 1, idx1), "clg_gather: indices must have 2 axes");
    expect_error(dev, "gather index too large", !clg_gather(a, 1, clg_zeros(dev, CLG_I32, CLG_SHAPE(5, 1))),
                 "clg_gather: index [5, 1]");
    expect_error(dev, "concat shapes", !clg_concat(2, (clg_tensor *[]){a, b}, 0), "clg_concat: input 1 [2, 5]");
    expect_error(dev, "concat ndim", !clg_concat(2, (clg_tensor *[]){a, fidx}, 0), "clg_concat: input 1 [2] float32");
    expect_error(dev, "concat axis", !clg_concat(2, (clg_tensor *[]){a, a}, 2), "clg_concat: axis 2 out of range");
    expect_error(dev, "concat scalars", !clg_concat(2, (clg_tensor *[]){s, s}, 0), "clg_concat");
    expect_error(dev, "stack shapes", !clg_stack(2, (clg_tensor *[]){a, b}, 0), "clg_stack: input 1 [2, 5]");
    expect_error(dev, "stack axis", !clg_stack(2, (clg_tensor *[]){a, a}, 3), "clg_stack: axis 3 out of range");

    /* mixed dtypes promote as torch.cat's: int32 with float32 is float32 */
    clg_tensor *mixed = clg_concat(2, (clg_tensor *[]){a, ai}, 0), *smixed = clg_stack(2, (clg_tensor *[]){ai, a}, 1);
    CHECK_MSG(mixed && clg_tensor_dtype(mixed) == CLG_F32 && clg_tensor_dim(mixed, 0) == 8, "concat of float32 and int32: %s",
              clg_device_error(dev));
    CHECK_MSG(smixed && clg_tensor_dtype(smixed) == CLG_F32, "stack of int32 and float32: %s", clg_device_error(dev));
    if (optest_fp64(dev)) {
        clg_tensor *h = clg_cast(a, CLG_F16), *d = clg_cast(a, CLG_F64), *bf = clg_cast(a, CLG_BF16);
        clg_tensor *hd = clg_concat(2, (clg_tensor *[]){h, d}, 0), *hb = clg_concat(2, (clg_tensor *[]){h, bf}, 0);
        CHECK_MSG(hd && clg_tensor_dtype(hd) == CLG_F64, "concat of float16 and float64");
        CHECK_MSG(hb && clg_tensor_dtype(hb) == CLG_F32, "concat of float16 and bfloat16");
    }

    clg_tensor *out[3] = {a, a, a};
    expect_error(dev, "split sum", clg_split(a, 1, 2, (const int64_t[]){1, 1}, out) != CLG_OK, "clg_split");
    CHECK(out[0] == NULL && out[1] == NULL);   /* never left pointing at anything */
    expect_error(dev, "split too much", clg_split(a, 0, 2, (const int64_t[]){3, 2}, out) != CLG_OK, "sum to 4");
    expect_error(dev, "split negative", clg_split(a, 0, 2, (const int64_t[]){-1, 5}, out) != CLG_OK, "size -1");
    expect_error(dev, "split huge", clg_split(a, 0, 2, (const int64_t[]){INT64_MAX, INT64_MAX}, out) != CLG_OK,
                 "clg_split");
    expect_error(dev, "split n 0", clg_split(a, 0, 0, (const int64_t[]){4}, out) != CLG_OK, "clg_split: 0 parts");
    expect_error(dev, "split NULL sizes", clg_split(a, 0, 1, NULL, out) != CLG_OK, "clg_split");
    expect_error(dev, "split axis", clg_split(a, -3, 1, (const int64_t[]){4}, out) != CLG_OK, "clg_split: axis -3");

    /* NULL in, NULL out, and nothing recorded over the error that made the NULL */
    CHECK(clg_index_select(NULL, 0, idx1) == NULL && clg_index_select(a, 0, NULL) == NULL);
    CHECK(clg_gather(NULL, 0, idx2) == NULL && clg_gather(a, 0, NULL) == NULL);
    CHECK(clg_concat(2, (clg_tensor *[]){a, NULL}, 0) == NULL && clg_concat(2, (clg_tensor *[]){NULL, a}, 0) == NULL);
    CHECK(clg_stack(2, (clg_tensor *[]){a, NULL}, 0) == NULL);
    CHECK(clg_concat(0, (clg_tensor *[]){a}, 0) == NULL && clg_concat(-1, (clg_tensor *[]){a}, 0) == NULL);
    CHECK(clg_stack(0, (clg_tensor *[]){a}, 0) == NULL && clg_concat(1, NULL, 0) == NULL);
    CHECK(clg_split(NULL, 0, 1, (const int64_t[]){4}, out) != CLG_OK && out[0] == NULL);
    CHECK_MSG(clg_device_error(dev)[0] == 0, "a NULL argument recorded '%s'", clg_device_error(dev));
    clg_scope_end(dev);
}

/* ---- backward of out-of-range indices, and no host reads ------------------------------------------------ */

static void test_backward_edges(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *a = clg_ones(dev, CLG_F32, CLG_SHAPE(4, 2));
    CHECK_OK(dev, clg_tensor_set_requires_grad(a, true));
    /* index_select: rows 3 (twice) and 0 count, -1 and 4 give NaN rows and no gradient.
     * The indices are made on the device (a cast), which the host cannot check: the ops
     * run, and the first read after them fails, naming the op (host-made ones are
     * refused at once: check_index_select). */
    clg_tensor *idx = clg_cast(clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(5), (const float[]){3, -1, 0, 4, 3}), CLG_I32);
    clg_tensor *gi = clg_cast(clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(4, 2), (const float[]){1, 0, 0, 2, 2, 1, 0, 5}),
                              CLG_I32);
    double v;
    clg_device_transfers_reset(dev);
    clg_tensor *y = clg_index_select(a, 0, idx);
    CHECK_OK(dev, clg_backward(clg_sum(y, 0, NULL, false), NULL));
    /* no reads to the host inside the ops or their backward passes */
    CHECK_MSG(clg_device_transfers(dev).d2h_count == 0, "index_select read %llu times",
              (unsigned long long)clg_device_transfers(dev).d2h_count);
    CHECK_MSG(clg_tensor_item(clg_sum(y, 0, NULL, false), &v) == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "clg_index_select: index ") &&
                  strstr(clg_device_error(dev), "out of range [0, 4)"), "%s",
              clg_device_error(dev));
    clg_device_clear_error(dev);
    optest_close("index_select out-of-range grad", clg_tensor_grad(a), (const double[]){1, 1, 0, 0, 0, 0, 2, 2}, 8, 0,
                 0);
    optest_close("index_select out-of-range rows", y, (const double[]){1, 1, NAN, NAN, 1, 1, NAN, NAN, 1, 1}, 10, 0,
                 0);
    /* gather: 2 and 5 are outside the 2 columns */
    clg_tensor_clear_grad(a);
    clg_device_transfers_reset(dev);
    y = clg_gather(a, 1, gi);
    CHECK_OK(dev, clg_backward(clg_sum(y, 0, NULL, false), NULL));
    CHECK(clg_device_transfers(dev).d2h_count == 0);
    CHECK_MSG(clg_tensor_item(clg_sum(y, 0, NULL, false), &v) == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "clg_gather: index"), "%s", clg_device_error(dev));
    clg_device_clear_error(dev);
    optest_close("gather out-of-range grad", clg_tensor_grad(a), (const double[]){1, 1, 1, 0, 0, 1, 1, 0}, 8, 0, 0);
    optest_close("gather out-of-range values", y, (const double[]){1, 1, 1, NAN, NAN, 1, 1, NAN}, 8, 0, 0);
    /* concat, stack, split: no reads either */
    clg_tensor_clear_grad(a);
    clg_device_transfers_reset(dev);
    clg_tensor *parts[2];
    CHECK_OK(dev, clg_split(a, 0, 2, (const int64_t[]){1, 3}, parts));
    clg_tensor *j = clg_stack(2, (clg_tensor *[]){clg_concat(2, (clg_tensor *[]){parts[1], parts[0]}, 0), a}, 0);
    CHECK_OK(dev, clg_backward(clg_sum(j, 0, NULL, false), NULL));
    CHECK(clg_device_transfers(dev).d2h_count == 0);
    optest_close("concat/stack/split grad", clg_tensor_grad(a), (const double[]){2, 2, 2, 2, 2, 2, 2, 2}, 8, 0, 0);
    clg_scope_end(dev);
}

/* Repeated indices add up in a fixed order: two runs give the same bits. */
static void test_deterministic(clg_device *dev)
{
    enum { ROWS = 7, KMAX = 3000, D = 33 };
    /* 1,000 keys under Oclgrind (CLG_TEST_SMALL): 3,000 took 18 of the test's 43 s there */
    const int K = optest_small() ? 1000 : KMAX;
    static double gvals[KMAX * D], idxv[KMAX];
    optest_fill(gvals, K * D, -1, 1, 41);
    fill_indices(idxv, K, ROWS, 43);
    float first[ROWS * D], second[ROWS * D];
    for (int run = 0; run < 2; run++) {
        clg_scope_begin(dev);
        clg_tensor *a = clg_zeros(dev, CLG_F32, CLG_SHAPE(ROWS, D));
        CHECK_OK(dev, clg_tensor_set_requires_grad(a, true));
        clg_tensor *idx = optest_tensor(dev, CLG_I32, CLG_SHAPE(K), idxv, OPTEST_CONTIGUOUS);
        clg_tensor *g = optest_tensor(dev, CLG_F32, CLG_SHAPE(K, D), gvals, OPTEST_PERMUTED);
        CHECK_OK(dev, clg_backward(clg_index_select(a, 0, idx), g));
        CHECK_OK(dev, clg_tensor_to_host(clg_tensor_grad(a), run ? second : first, sizeof first));
        clg_scope_end(dev);
    }
    CHECK_MSG(!memcmp(first, second, sizeof first), "index_select backward differs between runs");
    double want[ROWS * D] = {0};
    for (int k = 0; k < K; k++)
        for (int d = 0; d < D; d++) want[(int)idxv[k] * D + d] += gvals[k * D + d];
    clg_scope_begin(dev);
    clg_tensor *got = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(ROWS, D), first);
    optest_close("index_select backward sums", got, want, ROWS * D, 2e-3, 1e-4);
    clg_scope_end(dev);
}

/* ---- index_add, scatter_add, masked_fill ------------------------------------------------------ */

/* index_add of 700 rows of 32 into a [7, 32] table (an embedding's backward): rows of 16
 * columns take index.c's explicit-vector kernel in float32 where scatter = lines, and so
 * few work-items take chunks of keys summed in order; with a key out of range found by
 * the kernel. */
static void test_add_at_wide(clg_device *dev)
{
    enum { B = 7, C = 32, K = 700 };
    static double a[B * C], src[K * C], idx[K], want[B * C];
    fill_ints(a, B * C, 7);
    fill_ints(src, K * C, 8);
    fill_indices(idx, K, B, 9);
    memcpy(want, a, sizeof want);
    for (int m = 0; m < K; m++)
        for (int c = 0; c < C; c++) want[(int)idx[m] * C + c] += src[m * C + c];
    for (int di = 0; di < ndtypes; di++) {
        clg_scope_begin(dev);
        char w[256];
        clg_tensor *ta = optest_tensor(dev, dtypes[di], CLG_SHAPE(B, C), a, OPTEST_CONTIGUOUS);
        clg_tensor *ts = optest_tensor(dev, dtypes[di], CLG_SHAPE(K, C), src, OPTEST_CONTIGUOUS);
        clg_tensor *ti = optest_tensor(dev, CLG_I32, CLG_SHAPE(K), idx, OPTEST_CONTIGUOUS);
        what(w, sizeof w, "index_add", "700 rows of 32", dtypes[di], 0);
        optest_close(w, clg_index_add(ta, 0, ti, ts), want, B * C, 0, 0);
        clg_scope_end(dev);
    }
    clg_scope_begin(dev);
    idx[650] = B;
    clg_tensor *ta = optest_tensor(dev, CLG_F32, CLG_SHAPE(B, C), a, OPTEST_CONTIGUOUS);
    clg_tensor *ts = optest_tensor(dev, CLG_F32, CLG_SHAPE(K, C), src, OPTEST_CONTIGUOUS);
    CHECK(out_of_range(dev, "index_add 700 rows of 32, index 7 of 7", "index_add", true,
                       clg_index_add(ta, 0, optest_tensor(dev, CLG_I32, CLG_SHAPE(K), idx, OPTEST_CONTIGUOUS), ts),
                       clg_index_add(ta, 0, clg_cast(optest_tensor(dev, CLG_F32, CLG_SHAPE(K), idx, OPTEST_CONTIGUOUS),
                                                     CLG_I32), ts)) != NULL);
    clg_scope_end(dev);
}

/* a [4, 5, 3] plus src added along axis 1 at idx (repeats add up). */
static void test_add_at(clg_device *dev)
{
    enum { A = 4, B = 5, C = 3, K = 6 };
    static double a[A * B * C], src[A * K * C], want[A * B * C], sidx[A * K * C], want_s[A * B * C];
    const double idx[K] = {4, 0, 4, 2, 4, 1};
    fill_ints(a, A * B * C, 1);
    fill_ints(src, A * K * C, 2);
    fill_indices(sidx, A * K * C, B, 3);
    memcpy(want, a, sizeof want);
    memcpy(want_s, a, sizeof want_s);
    for (int i = 0; i < A; i++)
        for (int m = 0; m < K; m++)
            for (int c = 0; c < C; c++) {
                want[(i * B + (int)idx[m]) * C + c] += src[(i * K + m) * C + c];
                want_s[(i * B + (int)sidx[(i * K + m) * C + c]) * C + c] += src[(i * K + m) * C + c];
            }
    for (int di = 0; di < ndtypes; di++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char w[256];
            clg_tensor *ta = optest_tensor(dev, dtypes[di], CLG_SHAPE(A, B, C), a, (optest_layout)l);
            clg_tensor *ts = optest_tensor(dev, dtypes[di], CLG_SHAPE(A, K, C), src, (optest_layout)(OPTEST_LAYOUT_COUNT - 1 - l));
            clg_tensor *ti = optest_tensor(dev, CLG_I32, CLG_SHAPE(K), idx, l == 1 ? OPTEST_SLICED : OPTEST_CONTIGUOUS);
            what(w, sizeof w, "index_add", "axis 1, repeats", dtypes[di], l);
            optest_close(w, clg_index_add(ta, 1, ti, ts), want, A * B * C, 0, 0);
            clg_tensor *tsi = optest_tensor(dev, CLG_I32, CLG_SHAPE(A, K, C), sidx, (optest_layout)l);
            what(w, sizeof w, "scatter_add", "axis 1, repeats", dtypes[di], l);
            optest_close(w, clg_scatter_add(ta, 1, tsi, ts), want_s, A * B * C, 0, 0);
            clg_scope_end(dev);
        }
    clg_scope_begin(dev);
    clg_tensor *ta = optest_tensor(dev, CLG_F32, CLG_SHAPE(A, B, C), a, OPTEST_CONTIGUOUS);
    clg_tensor *ts = optest_tensor(dev, CLG_F32, CLG_SHAPE(A, K, C), src, OPTEST_CONTIGUOUS);
    /* out of range: refused at once for host-made indices, found by the kernel otherwise */
    const double bad[K] = {4, 0, 5, 2, 4, 1};
    clg_tensor *y = out_of_range(dev, "index_add index 5 of 5", "index_add", true,
                                 clg_index_add(ta, 1, optest_tensor(dev, CLG_I32, CLG_SHAPE(K), bad, OPTEST_CONTIGUOUS), ts),
                                 clg_index_add(ta, 1, clg_cast(optest_tensor(dev, CLG_F32, CLG_SHAPE(K), bad,
                                                                             OPTEST_CONTIGUOUS), CLG_I32), ts));
    CHECK(y != NULL);
    sidx[7] = -1;
    y = out_of_range(dev, "scatter_add index -1", "scatter_add", true,
                     clg_scatter_add(ta, 1, optest_tensor(dev, CLG_I32, CLG_SHAPE(A, K, C), sidx, OPTEST_CONTIGUOUS), ts),
                     clg_scatter_add(ta, 1, clg_cast(optest_tensor(dev, CLG_F32, CLG_SHAPE(A, K, C), sidx,
                                                                   OPTEST_CONTIGUOUS), CLG_I32), ts));
    CHECK(y != NULL);
    /* shapes that do not fit */
    clg_tensor *ti = optest_tensor(dev, CLG_I32, CLG_SHAPE(K), idx, OPTEST_CONTIGUOUS);
    CHECK(clg_index_add(ta, 0, ti, ts) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_index_add") && strstr(clg_device_error(dev), "src"), "%s",
              clg_device_error(dev));
    CHECK(clg_scatter_add(ta, 1, clg_zeros(dev, CLG_I32, CLG_SHAPE(A, 2, C)), ts) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_scatter_add"), "%s", clg_device_error(dev));
    /* masked_fill: a [2, 3] with a broadcast row mask, int32 and float masks */
    const double m[3] = {1, 0, 2}, v[6] = {1, 2, 3, 4, 5, 6};
    clg_tensor *tv = optest_tensor(dev, CLG_F32, CLG_SHAPE(2, 3), v, OPTEST_CONTIGUOUS);
    optest_close("masked_fill int32 mask", clg_masked_fill(tv, optest_tensor(dev, CLG_I32, CLG_SHAPE(3), m,
                                                                           OPTEST_CONTIGUOUS), -1e9),
                 (double[]){-1e9, 2, -1e9, -1e9, 5, -1e9}, 6, 0, 0);
    optest_close("masked_fill float mask -inf", clg_masked_fill(tv, optest_tensor(dev, CLG_F32, CLG_SHAPE(3), m,
                                                                                OPTEST_CONTIGUOUS), -INFINITY),
                 (double[]){-INFINITY, 2, -INFINITY, -INFINITY, 5, -INFINITY}, 6, 0, 0);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    dtypes[ndtypes++] = CLG_F32;
    if (optest_fp64(dev)) dtypes[ndtypes++] = CLG_F64;
    dtypes[ndtypes++] = CLG_I32;
    /* Both ways of adding at indices (device table: scatter), on whatever device runs:
     * the lists walked in order, and the sorted keys' runs. */
    for (int mode = 0; mode < 2; mode++) {
        const char *scatter = mode ? "sorted" : "lines";
        printf("scatter = %s\n", scatter);
        CHECK_OK(dev, clg_device_set_param(dev, "scatter", scatter));
        test_index_select(dev);
        test_gather(dev);
        test_add_at(dev);
        test_add_at_wide(dev);
        test_backward_edges(dev);
        test_deterministic(dev);
    }
    test_concat_stack(dev);
    test_split(dev);
    test_errors(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors leaked", (long long)clg_tensor_live_count(dev));
    clg_device_close(dev);
    return check_report("test_ops_index");
}
