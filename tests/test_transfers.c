/* The host<->device counters count exactly what crosses, and reset. */
#include <string.h>

#include "check.h"
#include "device_impl.h"

int main(void)
{
    clg_device *dev = check_open_device();
    clg_transfer_stats t = clg_device_transfers(dev);
    CHECK(t.h2d_bytes == 0 && t.d2h_bytes == 0 && t.h2d_count == 0 && t.d2h_count == 0);

    float host[1000], back[1000];
    for (int i = 0; i < 1000; i++) host[i] = (float)i;
    clg_buffer *b = clg__buffer_alloc(dev, sizeof host);
    CHECK_OK(dev, clg__write(dev, b, 0, host, sizeof host));
    CHECK_OK(dev, clg__write(dev, b, 40, host, 12));
    CHECK_OK(dev, clg__read(dev, b, 0, back, 400));
    CHECK_OK(dev, clg__read(dev, b, 0, back, 0)); /* nothing crosses, nothing counted */
    t = clg_device_transfers(dev);
    CHECK(t.h2d_bytes == 4012 && t.h2d_count == 2 && t.d2h_bytes == 400 && t.d2h_count == 1);
    CHECK(back[10] == 0.0f && back[11] == 1.0f && back[13] == 13.0f);

    /* Device-to-device copies do not count as transfers. */
    clg_buffer *c = clg__buffer_alloc(dev, sizeof host);
    CHECK_OK(dev, clg__copy(dev, b, 0, c, 0, sizeof host));
    CHECK(clg_device_transfers(dev).h2d_bytes == 4012);

    /* Out-of-range requests fail without moving anything. */
    CHECK(clg__read(dev, b, b->size - 4, back, 8) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg__write(dev, b, b->size + 1, host, 1) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_device_transfers(dev).d2h_count == 1);

    clg_device_transfers_reset(dev);
    t = clg_device_transfers(dev);
    CHECK(t.h2d_bytes == 0 && t.d2h_bytes == 0 && t.h2d_count == 0 && t.d2h_count == 0);

    /* The selftest moves n floats up and n floats back, nothing else. */
    CHECK_OK(dev, clg_device_selftest(dev, 777));
    t = clg_device_transfers(dev);
    CHECK(t.h2d_bytes == 777 * 4 && t.d2h_bytes == 777 * 4 && t.h2d_count == 1 && t.d2h_count == 1);
    clg__buffer_release(b);
    clg__buffer_release(c);
    clg_device_close(dev);
    return check_report("test_transfers");
}
