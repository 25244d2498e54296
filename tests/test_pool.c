/* The buffer pool: reuse, size classes, statistics, and limits. Reaches behind the
 * public API (device_impl.h) to allocate buffers directly. */
#include <string.h>

#include "check.h"
#include "device_impl.h"

/* Buffers handed out under a key (clg__buffer_alloc_kept) come back to the next request
 * for that key with their contents; plain requests take them last and end the key; a
 * graph capture never gets one. */
static void kept_contents(clg_device *dev)
{
    const uint64_t K = 0x5eed, K2 = 0x5eee;
    float v[256], r[256];
    for (int i = 0; i < 256; i++) v[i] = (float)i - 7.5f;
    clg_device_pool_trim(dev);
    bool kept = true;
    clg_buffer *a = clg__buffer_alloc_kept(dev, sizeof v, K, &kept);
    CHECK(a && !kept && a->keep == K);   /* new: the caller fills it */
    CHECK_OK(dev, clg__write(dev, a, 0, v, sizeof v));
    const clg_mem *mem_a = a->mem;
    clg__buffer_release(a);
    clg_buffer *b = clg__buffer_alloc_kept(dev, sizeof v, K, &kept);
    CHECK(b && kept && b->mem == mem_a);
    CHECK_OK(dev, clg__read(dev, b, 0, r, sizeof r));
    CHECK(!memcmp(v, r, sizeof v));
    /* a plain request takes a plain buffer of its size before a keyed one... */
    clg_buffer *q = clg__buffer_alloc(dev, sizeof v);
    CHECK(q && q->mem != mem_a && q->keep == 0);
    const clg_mem *mem_q = q ? q->mem : NULL;
    clg__buffer_release(q);
    clg__buffer_release(b);
    clg_buffer *c = clg__buffer_alloc(dev, sizeof v);
    CHECK(c && c->mem == mem_q);
    clg_buffer *d = clg__buffer_alloc_kept(dev, sizeof v, K, &kept);
    CHECK(d && kept && d->mem == mem_a);
    clg__buffer_release(d);
    /* ... where only keyed ones are left, takes one and ends its key */
    clg_buffer *e = clg__buffer_alloc(dev, sizeof v);
    CHECK(e && e->mem == mem_a && e->keep == 0);
    clg__buffer_release(e);
    clg_buffer *f = clg__buffer_alloc_kept(dev, sizeof v, K, &kept);
    CHECK(f && !kept && f->mem == mem_a && f->keep == K);
    clg__buffer_release(f);
    /* another key: not these contents */
    clg_buffer *g = clg__buffer_alloc_kept(dev, sizeof v, K2, &kept);
    CHECK(g && !kept && g->keep == K2);
    clg__buffer_release(g);
    /* under a graph capture's recording layer: never an earlier owner's contents */
    clg_tensor *t = clg_zeros(dev, CLG_F32, 1, (const int64_t[]){4});
    CHECK_OK(dev, clg_graph_begin(dev));
    clg_buffer *h = clg__buffer_alloc_kept(dev, sizeof v, K2, &kept);
    CHECK(h && !kept && h->keep == 0);
    clg__buffer_release(h);
    CHECK_OK(dev, clg_fill_(t, 1.0));
    clg_graph *gr = NULL;
    CHECK_OK(dev, clg_graph_end(dev, &gr));
    clg_graph_free(gr);
    clg_tensor_free(t);
    clg__buffer_release(c);
    clg_device_pool_trim(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    const clg_device_info *in = clg_device_get_info(dev);

    /* Size classes: never smaller than asked, at most 25% larger past 1 KiB, multiples
     * of the base-address alignment. */
    for (size_t n = 1; n < (1u << 26); n = n * 3 + 7) {
        size_t r = clg__pool_round(dev, n);
        CHECK_MSG(r >= n && r % in->base_align == 0, "%zu -> %zu", n, r);
        if (n > 1024) CHECK_MSG(r <= n + n / 4 + in->base_align, "%zu -> %zu", n, r);
    }

    clg_buffer *a = clg__buffer_alloc(dev, 1000 * sizeof(float));
    CHECK(a && a->refs == 1);
    const clg_mem *mem_a = a ? a->mem : NULL;
    clg_pool_stats s = clg_device_pool_stats(dev);
    CHECK(s.allocs == 1 && s.hits == 0 && s.device_allocs == 1 && s.in_use_bytes == a->size);
    clg__buffer_release(a);
    s = clg_device_pool_stats(dev);
    CHECK(s.in_use_bytes == 0 && s.cached_bytes > 0 && s.peak_bytes >= 4000);

    /* The same size again: the same cl_mem, no new device allocation. */
    clg_buffer *b = clg__buffer_alloc(dev, 990 * sizeof(float));
    CHECK(b && b->mem == mem_a);
    s = clg_device_pool_stats(dev);
    CHECK(s.allocs == 2 && s.hits == 1 && s.device_allocs == 1 && s.cached_bytes == 0);

    /* Views share a buffer: retained buffers return to the pool at the last release. */
    clg__buffer_retain(b);
    clg__buffer_release(b);
    CHECK(clg_device_pool_stats(dev).in_use_bytes == b->size);
    clg__buffer_release(b);
    CHECK(clg_device_pool_stats(dev).in_use_bytes == 0);

    /* A very different size is a new allocation. */
    clg_buffer *c = clg__buffer_alloc(dev, 1 << 20);
    CHECK(c && c->mem != mem_a);
    CHECK(clg_device_pool_stats(dev).device_allocs == 2);

    /* Beyond the device's largest allocation: a clear error, nothing allocated. */
    clg_device_clear_error(dev);
    clg_buffer *huge = clg__buffer_alloc(dev, (size_t)in->max_alloc + 1);
    CHECK(huge == NULL);
    CHECK(clg_device_last_status(dev) == CLG_ERR_OUT_OF_MEMORY);
    char limit[64];
    snprintf(limit, sizeof limit, "%llu", (unsigned long long)in->max_alloc);
    CHECK_MSG(strstr(clg_device_error(dev), limit) && strstr(clg_device_error(dev), "largest single allocation"),
              "%s", clg_device_error(dev));
    CHECK(clg_device_pool_stats(dev).device_allocs == 2);

    /* ... and the context still works. */
    clg_device_clear_error(dev);
    CHECK_OK(dev, clg_device_selftest(dev, 4096));
    kept_contents(dev);
    /* pool_keep bounds what the pool keeps: with 0, a freed buffer goes back to OpenCL. */
    clg__buffer_release(c);
    CHECK_MSG(clg_device_set_param(dev, "pool_keep", "0") == CLG_OK && dev->params.pool_keep == 0, "%s",
              clg_device_error(dev));
    clg_buffer *d = clg__buffer_alloc(dev, 1000 * sizeof(float));
    CHECK(d);
    s = clg_device_pool_stats(dev);
    uint64_t allocs_before = s.device_allocs, kept_before = s.cached_bytes;   /* c's and the selftest's */
    clg__buffer_release(d);
    s = clg_device_pool_stats(dev);
    CHECK_MSG(s.in_use_bytes == 0 && s.cached_bytes == kept_before, "kept %llu bytes, %llu before",
              (unsigned long long)s.cached_bytes, (unsigned long long)kept_before);
    d = clg__buffer_alloc(dev, 1000 * sizeof(float));
    CHECK(d && clg_device_pool_stats(dev).device_allocs == allocs_before + 1);
    clg__buffer_release(d);
    clg_device_pool_trim(dev);
    s = clg_device_pool_stats(dev);
    CHECK(s.cached_bytes == 0 && s.in_use_bytes == 0);
    clg_device_close(dev);
    return check_report("test_pool");
}
