/* The buffer pool: reuse, size classes, statistics, and limits. Reaches behind the
 * public API (device_impl.h) to allocate buffers directly. */
#include <string.h>

#include "check.h"
#include "device_impl.h"

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
