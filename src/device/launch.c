/* launch.c: the program runner: set a kernel's arguments and enqueue it. Returns as
 * soon as the work is queued; nothing here waits for the device. */
#include <stdio.h>

#include "backend.h"
#include "capture.h"
#include "layer.h"

clg_arg clg__arg_int8(const int64_t *v, int n)
{
    clg_arg a = {.kind = CLG_ARG_INT8};
    for (int i = 0; i < 8; i++) a.v.i8.s[i] = i < n ? (int32_t)v[i] : 0;
    return a;
}

/* Both through the runtime's layers (layer.h): a recording layer keeps the arguments
 * and each enqueue, a profiling layer times it. */
static clg_status set_args(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs)
{
    return dev->rt->ops->set_args(dev->rt, k, k->k, args, nargs);
}

/* Enqueue over [offset, offset + global) in each dimension. */
static clg_status enqueue(clg_device *dev, clg_kernel *k, int dims, const size_t *offset, const size_t *global,
                          const size_t *local)
{
    return dev->rt->ops->launch(dev->rt, k, k->k, dims, offset, global, local, NULL);
}

clg_status clg__launch_native(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs)
{
    return dev->rt->ops->native(dev->rt, k, args, nargs, NULL);
}

/* The device's and the kernel's limits on a group, checked here once for every launch
 * so that an op gets an error naming the kernel and the sizes, not a bare
 * CL_INVALID_WORK_GROUP_SIZE (or, worse, a launch that silently does less). */
static clg_status check_group(clg_device *dev, const clg_kernel *k, int dims, const size_t *local)
{
    const clg_device_params *p = &dev->params;
    size_t items = 1;
    for (int d = 0; d < dims; d++) {
        if (local[d] == 0 || local[d] > p->max_item[d])
            return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                             "%s: work-group size %zu along dimension %d is outside the device's 1..%zu", k->name,
                             local[d], d, p->max_item[d]);
        items *= local[d];
    }
    if (items > k->wg_max || items > p->max_group)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "%s: work-group of %zu items, more than the kernel's limit %zu or the device's %zu", k->name,
                         items, k->wg_max, p->max_group);
    return CLG_OK;
}

clg_status clg__launch(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, int dims,
                       const size_t *global, const size_t *local)
{
    size_t g[3], local_bytes = 0;
    for (int d = 0; d < dims; d++) {
        if (global[d] == 0) return CLG_OK; /* nothing to do; OpenCL 1.2 rejects a zero size */
        g[d] = local ? (global[d] + local[d] - 1) / local[d] * local[d] : global[d];
    }
    clg_status st = local ? check_group(dev, k, dims, local) : CLG_OK;
    for (int i = 0; !st && i < nargs; i++)
        if (args[i].kind == CLG_ARG_LOCAL) local_bytes += args[i].v.local;
    if (!st && local_bytes > dev->params.local_mem)
        st = clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: %zu bytes of local memory, more than the device's %llu",
                       k->name, local_bytes, (unsigned long long)dev->params.local_mem);
    if (!st) st = set_args(dev, k, args, nargs);
    return st ? st : enqueue(dev, k, dims, NULL, g, local);
}

/* A refreshed launch: the refresh recorded on the launch after it (refresh_after, given
 * the launch's status and the capture's mark before it), unless it launched nothing (a
 * zero size): the refresh would land on an earlier launch's arguments. */
static clg_status refresh_after(clg_device *dev, clg_status st, clg_refresh r, int mark)
{
    if (st == CLG_OK && r.fn && clg__cap_mark(dev) > mark) clg__cap_refresh(dev, r.fn, r.data, r.size);
    return st;
}

clg_status clg__launch_1d_refreshed(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, size_t n,
                                    clg_refresh refresh)
{
    int mark = clg__cap_mark(dev);
    clg_status st = clg__launch_1d(dev, k, args, nargs, n);
    return refresh_after(dev, st, refresh, mark);
}

clg_status clg__launch_final(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, int dims,
                             const size_t *global, const size_t *local, const clg_buffer *c, size_t elems)
{
    int mark = clg__cap_mark(dev);
    clg_status st = clg__launch(dev, k, args, nargs, dims, global, local);
    if (st == CLG_OK && c) clg__cap_note_final(dev, mark, c, elems);
    return st;
}

clg_status clg__launch_copy(clg_device *dev, clg_status (*fn)(void *data), void *data, clg_copy_note note)
{
    int mark = clg__cap_mark(dev);
    clg_status st = fn(data);
    if (st == CLG_OK && note.dst)
        clg__cap_note_copy(dev, mark, note.dst, note.dst_off, note.src, note.src_off, note.bytes);
    return st;
}

/* The work-group size for exact 1-D and row launches: the table's, within the kernel's
 * limit. */
static size_t group_size(const clg_device *dev, const clg_kernel *k)
{
    size_t local = dev->params.group_1d;
    if (local > k->wg_max) local = k->wg_max;
    return local ? local : 1;
}

size_t clg__divisor_at_most(size_t n, size_t cap)
{
    if (n <= cap) return n ? n : 1;
    for (size_t d = cap; d > 1; d--)
        if (n % d == 0) return d;
    return 1;
}

/* The largest power of two that divides n, at most cap. */
static size_t pow2_divisor(size_t n, size_t cap)
{
    size_t d = 1;
    while (d * 2 <= cap && n % (d * 2) == 0) d *= 2;
    return d;
}

/* A group for part of a tail: l0 items along dimension 0 and, so that groups are not
 * narrow slivers, up to cap items in all from dimensions 1 and 2, in powers of two that
 * divide their sizes: few distinct group shapes. But no more than leaves two groups for
 * each compute unit where the part has the items for them: a scatter-add along a long
 * axis, 16 lists of 65,536 keys as (1, 1, 16) items, ran as one group of 16 on one of
 * POCL's two cores (0.48 ms a launch of two; [16, 65536]'s forward 1.1 ms). */
static void tail_group(const clg_device *dev, size_t l0, const size_t *n, int dims, size_t cap, size_t *local)
{
    size_t cu = dev->info.compute_units ? dev->info.compute_units : 1, share = n[0] * n[1] * n[2] / (2 * cu);
    if (cap > share) cap = share > l0 ? share : l0;
    size_t room = cap / l0;
    local[0] = l0;
    local[1] = dims > 1 ? pow2_divisor(n[1], room < dev->params.max_item[1] ? room : dev->params.max_item[1]) : 1;
    room /= local[1];
    local[2] = dims > 2 ? pow2_divisor(n[2], room < dev->params.max_item[2] ? room : dev->params.max_item[2]) : 1;
}

/* The tail of an exact launch, tail[0] items along dimension 0 from offset at0: one
 * launch whose groups the driver picks (group_tail = 0), or, where the driver compiles
 * a kernel anew for every group shape it meets (POCL: ~80 ms each time, so that a test
 * of thousands of tensor sizes compiled 5,600 kernels), groups group_tail wide over the
 * largest multiple of group_tail in the tail, then groups one item wide: a kernel meets
 * three widths (1, group_tail and 256, times powers of two across), not one per tensor
 * size. (One group as wide as that multiple, as before session 24, gave a width per
 * small tensor size: the CNN's first step compiled 61 kernels on POCL; the tail's few
 * hundred items in groups of 16 rather than one cost nothing measurable.) */
static clg_status launch_tail(clg_device *dev, clg_kernel *k, int dims, size_t at0, const size_t *tail, size_t wg)
{
    size_t at[3] = {at0, 0, 0}, tg = dev->params.group_tail < wg ? dev->params.group_tail : wg, local[3];
    if (!tg) return enqueue(dev, k, dims, at, tail, NULL);
    /* groups of at most wg items, as the whole groups: a driver that keeps each item's
     * private arrays on its thread's stack (POCL) overflowed it with groups of 4,096 */
    size_t width = tail[0] / tg * tg, cap = wg;
    size_t mid[3] = {width, tail[1], tail[2]}, rest[3] = {tail[0] - mid[0], tail[1], tail[2]};
    clg_status st = CLG_OK;
    if (mid[0]) {
        tail_group(dev, tg, mid, dims, cap, local);
        st = enqueue(dev, k, dims, at, mid, local);
    }
    if (st || !rest[0]) return st;
    at[0] += mid[0];
    tail_group(dev, 1, rest, dims, cap, local);
    return enqueue(dev, k, dims, at, rest, local);
}

/* Exactly n0 x n1 x n2 work-items. One launch when a group of at least the table's
 * group_1d_min divides n0; otherwise whole groups along dimension 0, then the tail at an
 * offset. Kernels then need no bounds check, and POCL vectorizes a work-group's loop
 * only without one. */
static clg_status launch_exact(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, size_t n0,
                               size_t n1, size_t n2, int dims)
{
    if (n0 == 0 || n1 == 0 || n2 == 0) return CLG_OK;
    clg_status st = set_args(dev, k, args, nargs);
    if (st) return st;
    size_t wg = group_size(dev, k), fit = clg__divisor_at_most(n0, wg);
    size_t min = dev->params.group_1d_min < wg ? dev->params.group_1d_min : wg;
    size_t local[3] = {fit >= min ? fit : wg, 1, 1};
    /* Short rows (n0 below the smallest whole group, a multiple of the vector width or
     * at least two of them, on a device that compiles per group shape): groups of
     * several whole rows, n0 x d. As whole groups of n0 and a tail they ran as groups of
     * one vector each: [16384, 64] + [64] took 1.38 ms against 0.23 so (POCL, AVX2;
     * PyTorch 0.17); and rows of 196 or 49 (a ResNet's 14 x 14 and 7 x 7 planes) ran
     * their last 4 or 1 columns as groups one item wide, 30x slower than the rest (3.7
     * ms against 0.12 for batch norm's [4096 rows, 196]). A row as wide as n0 costs a
     * compile per row length on such a device, so not for rows shorter than two
     * vectors, which many small tensors have. */
    size_t tg = dev->params.group_tail;
    if (dims > 1 && fit < min && fit == n0 && tg && (n0 % tg == 0 || n0 >= 2 * tg)) {
        local[0] = n0;
        local[1] = clg__divisor_at_most(n1, wg / n0);
    }
    size_t whole[3] = {n0 / local[0] * local[0], n1, n2}, tail[3] = {n0 - whole[0], n1, n2};
    if (whole[0] && (st = enqueue(dev, k, dims, NULL, whole, local))) return st;
    return tail[0] ? launch_tail(dev, k, dims, whole[0], tail, wg) : CLG_OK;
}

clg_status clg__launch_1d(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, size_t n)
{
    return launch_exact(dev, k, args, nargs, n, 1, 1, 1);
}

clg_status clg__launch_rows(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, size_t inner,
                            size_t rows)
{
    return launch_exact(dev, k, args, nargs, inner, rows, 1, 2);
}

clg_status clg__launch_rows3(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, size_t inner,
                             size_t rows, size_t planes)
{
    return launch_exact(dev, k, args, nargs, inner, rows, planes, 3);
}
