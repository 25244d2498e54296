/* pool.c: device buffers, reused through a pool.
 *
 * Sizes are rounded to classes (at most 25% over the request, multiples of the
 * device's base-address alignment) so that a freed buffer fits the next request of
 * about the same size; a training step asks for the same sizes every time, so after
 * the first step almost every request is a hit. Freed buffers are kept up to
 * the device table's pool_keep bytes; when OpenCL runs out, the pool is emptied and the request tried
 * once more.
 *
 * A buffer may carry a key of what it holds (clg__buffer_alloc_kept): a convolution's
 * zero-padded planes, whose zeros no later write touches, so that the next request for
 * the same planes takes it back and skips refilling them (src/tensor/conv_shift.c). Plain
 * requests take keyed buffers last, and clear their key. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "layer.h"

size_t clg__pool_round(const clg_device *dev, size_t bytes)
{
    size_t align = dev->info.base_align > 256 ? dev->info.base_align : 256;
    if (bytes <= align) return align;
    size_t top = (size_t)1 << (63 - __builtin_clzll((unsigned long long)bytes));
    size_t step = top / 4 > align ? top / 4 : align;
    if (bytes > SIZE_MAX - step) return bytes;
    return (bytes + step - 1) / step * step;
}

/* A free buffer of `size` whose key is `keep` (any key: keep_any), newest first (warm in
 * caches), out of the free list. */
static clg_buffer *take_cached(clg_device *dev, size_t size, uint64_t keep, bool keep_any)
{
    clg_pool *p = &dev->pool;
    for (size_t i = p->nfree; i-- > 0;) {
        clg_buffer *b = p->free[i];
        if (b->size != size || (!keep_any && b->keep != keep)) continue;
        p->free[i] = p->free[--p->nfree];
        p->stats.cached_bytes -= b->size;
        return b;
    }
    return NULL;
}

static void destroy(clg_buffer *b)
{
    clg__mem_free(b->mem);
    free(b);
}

void clg_device_pool_trim(clg_device *dev)
{
    if (!dev) return;
    clg_pool *p = &dev->pool;
    for (size_t i = 0; i < p->nfree; i++) destroy(p->free[i]);
    p->nfree = 0;
    p->stats.cached_bytes = 0;
}

void clg__pool_free_all(clg_device *dev)
{
    clg_device_pool_trim(dev);
    free(dev->pool.free);
    dev->pool.free = NULL;
    dev->pool.capfree = 0;
}

clg_pool_stats clg_device_pool_stats(const clg_device *dev)
{
    clg_pool_stats z = {0};
    return dev ? dev->pool.stats : z;
}

/* Through the runtime's layers (layer.h): a recording layer notes the buffer's birth. */
clg_buffer *clg__buffer_alloc(clg_device *dev, size_t bytes) { return dev->rt->ops->alloc(dev->rt, bytes, 0, NULL); }

clg_buffer *clg__buffer_alloc_kept(clg_device *dev, size_t bytes, uint64_t keep, bool *kept)
{
    *kept = false;
    return dev->rt->ops->alloc(dev->rt, bytes, keep, kept);
}

clg_buffer *clg__pool_take(clg_device *dev, size_t bytes, uint64_t keep, bool *kept)
{
    clg_pool *p = &dev->pool;
    if (bytes == 0) bytes = 1;   /* zero-size tensors still own a (tiny) buffer */
    if (bytes > dev->info.max_alloc) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY,
                  "buffer of %zu bytes exceeds the device's largest single allocation of %llu "
                  "bytes (%s)", bytes, (unsigned long long)dev->info.max_alloc, dev->info.name);
        return NULL;
    }
    size_t size = clg__pool_round(dev, bytes);
    if (size > dev->info.max_alloc) size = bytes;
    p->stats.allocs++;
    clg_buffer *b = keep ? take_cached(dev, size, keep, false) : NULL;
    if (b && kept) *kept = true;
    if (!b) b = take_cached(dev, size, 0, false);   /* plain ones first: keyed ones stay for their key */
    if (!b) b = take_cached(dev, size, 0, true);
    if (b) {
        p->stats.hits++;
    } else {
        b = calloc(1, sizeof *b);
        if (!b) {
            clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_buffer: out of host memory");
            return NULL;
        }
        int e;
        bool exhausted;
        b->mem = clg__mem_new(dev, size, &e, &exhausted);
        if (!b->mem && exhausted) {   /* the cached buffers go, then once more */
            clg_device_pool_trim(dev);
            b->mem = clg__mem_new(dev, size, &e, &exhausted);
        }
        if (!b->mem) {
            char what[96];
            snprintf(what, sizeof what, "%zu bytes", size);
            clg__cl_fail(dev, e, "clCreateBuffer", what);
            free(b);
            return NULL;
        }
        p->stats.device_allocs++;
        b->size = size;
        b->dev = dev;
    }
    b->refs = 1;
    b->range.known = false;   /* a reused buffer's contents are not its last owner's */
    b->keep = keep;           /* (kept: they are; else the caller fills it as `keep` says) */
    p->stats.in_use_bytes += b->size;
    if (p->stats.in_use_bytes > p->stats.peak_bytes) p->stats.peak_bytes = p->stats.in_use_bytes;
    return b;
}

void clg__buffer_retain(clg_buffer *b)
{
    if (b) b->refs++;
}

void clg__buffer_release(clg_buffer *b)
{
    if (!b || --b->refs > 0) return;
    b->dev->rt->ops->release(b->dev->rt, b);   /* a recording layer notes its death */
}

void clg__pool_put(clg_device *dev, clg_buffer *b)
{
    clg_pool *p = &dev->pool;
    p->stats.in_use_bytes -= b->size;
    /* Queued kernels may still use b; OpenCL keeps the memory alive until they finish,
     * and the in-order queue runs whoever gets it next after them. */
    if (p->stats.cached_bytes + b->size > dev->params.pool_keep) {
        destroy(b);
        return;
    }
    if (p->nfree == p->capfree) {
        size_t cap = p->capfree ? p->capfree * 2 : 64;
        clg_buffer **nf = realloc(p->free, cap * sizeof *nf);
        if (!nf) {
            destroy(b);
            return;
        }
        p->free = nf;
        p->capfree = cap;
    }
    p->free[p->nfree++] = b;
    p->stats.cached_bytes += b->size;
}
