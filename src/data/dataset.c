/* dataset.c: the dataset interface and in-memory datasets over host arrays. */
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

struct clg_dataset {
    clg_dataset_i iface;
    void *self;
    int ndim;
    int64_t shape[CLG_MAX_DIMS];
    int64_t numel;
    int num_classes;
};

clg_status clg_dataset_new(const clg_dataset_i *iface, void *self, int ndim, const int64_t *shape,
                           int num_classes, clg_dataset **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    clg_status st = CLG_OK;
    if (!iface || !iface->length || !iface->get || !out || ndim < 0 || ndim > CLG_MAX_DIMS || (ndim && !shape) ||
        num_classes < 0)
        st = clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "clg_dataset_new",
                            "needs length and get functions, 0 to %d axes and num_classes >= 0", CLG_MAX_DIMS);
    int64_t numel = st ? 0 : clg__checked_bytes(ndim, shape, 1);
    if (!st && numel <= 0)
        st = clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "clg_dataset_new", "empty or impossible sample shape");
    clg_dataset *ds = st ? NULL : calloc(1, sizeof *ds);
    if (!st && !ds) st = clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, "clg_dataset_new", "out of memory");
    if (st) {
        if (iface && iface->free) iface->free(self);
        return st;
    }
    ds->iface = *iface;
    ds->self = self;
    ds->ndim = ndim;
    if (ndim) memcpy(ds->shape, shape, (size_t)ndim * sizeof *shape);
    ds->numel = numel;
    ds->num_classes = num_classes;
    *out = ds;
    return CLG_OK;
}

void clg_dataset_free(clg_dataset *ds)
{
    if (!ds) return;
    if (ds->iface.free) ds->iface.free(ds->self);
    free(ds);
}

int64_t clg_dataset_length(const clg_dataset *ds) { return ds ? ds->iface.length(ds->self) : 0; }
int64_t clg_dataset_sample_numel(const clg_dataset *ds) { return ds ? ds->numel : 0; }
int clg_dataset_num_classes(const clg_dataset *ds) { return ds ? ds->num_classes : 0; }

const int64_t *clg_dataset_sample_shape(const clg_dataset *ds, int *ndim)
{
    if (ndim) *ndim = ds ? ds->ndim : 0;
    return ds ? ds->shape : NULL;
}

clg_status clg_dataset_get(const clg_dataset *ds, int64_t i, float *x, int32_t *label, char *err, size_t errlen)
{
    if (!ds || !x || !label)
        return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "clg_dataset_get", "NULL argument");
    int64_t n = ds->iface.length(ds->self);
    if (i < 0 || i >= n)
        return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "clg_dataset_get",
                              "index %lld outside a dataset of %lld samples", (long long)i, (long long)n);
    return ds->iface.get(ds->self, i, x, label, err, errlen);
}

/* ---- in memory ------------------------------------------------------------------------- */

typedef struct array_ds {
    clg_host_array x, y;
    int64_t n, numel;
} array_ds;

static int64_t array_length(void *self) { return ((array_ds *)self)->n; }

static clg_status array_get(void *self, int64_t i, float *x, int32_t *label, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    const array_ds *a = self;
    int64_t base = i * a->numel;
    if (a->x.type == CLG_ELEM_U8) {   /* the common case, without a switch per value */
        const unsigned char *p = (const unsigned char *)a->x.data + base;
        for (int64_t k = 0; k < a->numel; k++) x[k] = p[k];
    } else if (a->x.type == CLG_ELEM_F32) {
        memcpy(x, (const float *)a->x.data + base, (size_t)a->numel * sizeof *x);
    } else {
        for (int64_t k = 0; k < a->numel; k++) x[k] = (float)clg__host_array_get(&a->x, base + k);
    }
    *label = (int32_t)clg__host_array_get(&a->y, i);
    return CLG_OK;
}

static void array_free(void *self)
{
    array_ds *a = self;
    clg_host_array_free(&a->x);
    clg_host_array_free(&a->y);
    free(a);
}

static const clg_dataset_i array_iface = {array_length, array_get, array_free};

/* Labels: an integer type, one per sample, each in [0, 2^31); *max the largest. */
static clg_status check_labels(const clg_host_array *x, const clg_host_array *y, int64_t *max, char *err,
                               size_t errlen)
{
    if (x->ndim < 1 || x->ndim > CLG_MAX_DIMS || !x->data)
        return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "dataset", "samples need a leading axis");
    if ((unsigned)x->type > CLG_ELEM_F64)   /* clg__host_array_get reads uint8 .. float64 */
        return clg__data_fail(err, errlen, CLG_ERR_DTYPE, "dataset", "samples of %s: want uint8, int32, int64, "
                              "float32 or float64", clg_elem_name(x->type));
    if (clg__checked_bytes(x->ndim, x->shape, clg_elem_size(x->type)) != (int64_t)x->bytes ||
        (y->ndim == 1 && clg__checked_bytes(1, y->shape, clg_elem_size(y->type)) != (int64_t)y->bytes))
        return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "dataset",
                              "an array's byte count does not match its type and shape");
    if (y->ndim != 1 || y->shape[0] != x->shape[0] || !y->data ||
        (y->type != CLG_ELEM_U8 && y->type != CLG_ELEM_I32 && y->type != CLG_ELEM_I64))
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, "dataset",
                              "%lld samples need %lld integer labels in a 1-axis array (got %d axes of %s, %lld)",
                              (long long)x->shape[0], (long long)x->shape[0], y->ndim, clg_elem_name(y->type),
                              (long long)(y->ndim ? y->shape[0] : 0));
    *max = -1;
    for (int64_t i = 0; i < y->shape[0]; i++) {
        double v = clg__host_array_get(y, i);
        if (v < 0 || v > INT32_MAX)
            return clg__data_fail(err, errlen, CLG_ERR_FORMAT, "dataset", "label %lld is %.0f (must be in [0, 2^31))",
                                  (long long)i, v);
        if (v > *max) *max = (int64_t)v;
    }
    return CLG_OK;
}

clg_status clg_dataset_from_arrays(clg_host_array *x, clg_host_array *labels, int num_classes, clg_dataset **out,
                                   char *err, size_t errlen)
{
    if (out) *out = NULL;
    if (!x || !labels || !out) return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "dataset", "NULL argument");
    array_ds *a = calloc(1, sizeof *a);
    if (a) {
        a->x = *x;
        a->y = *labels;
    } else {
        clg_host_array_free(x);
        clg_host_array_free(labels);
        return clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, "dataset", "out of memory");
    }
    memset(x, 0, sizeof *x);
    memset(labels, 0, sizeof *labels);
    int64_t max = -1;
    clg_status st = check_labels(&a->x, &a->y, &max, err, errlen);
    if (!st && num_classes > 0 && max >= num_classes)
        st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, "dataset", "label %lld with %d classes", (long long)max,
                            num_classes);
    if (!st && num_classes == 0 && max >= INT32_MAX)
        st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, "dataset", "label %lld: too many classes", (long long)max);
    if (st) {
        array_free(a);
        return st;
    }
    a->n = a->x.shape[0];
    a->numel = 1;
    for (int i = 1; i < a->x.ndim; i++) a->numel *= a->x.shape[i];
    int ndim = a->x.ndim - 1;
    int64_t shape[CLG_MAX_DIMS];
    memcpy(shape, a->x.shape + 1, (size_t)ndim * sizeof *shape);
    if (ndim == 0) shape[ndim++] = 1;   /* scalar samples become [1] */
    return clg_dataset_new(&array_iface, a, ndim, shape, num_classes ? num_classes : (int)(max + 1), out, err,
                           errlen);
}
