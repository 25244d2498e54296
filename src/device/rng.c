/* rng.c: the device's Philox generator: its position (seed, offset in blocks of four
 * 32-bit words) lives in the device, and kernels get it only through a CLG_ARG_RNG
 * argument (device_impl.h), which the launcher resolves here and a graph capture
 * records as drawn anew at each replay. No op reads or advances it itself, so no op
 * can pass a stale position or forget to move it on. */
#include "clgrad/tensor.h"
#include "device_impl.h"

#define DEFAULT_SEED 0x5eed

void clg__rng_take(clg_device *dev, uint64_t blocks, clg_rng_pos *pos)
{
    pos->seed = dev->rng.seed;
    pos->offset = dev->rng.offset;
    dev->rng.offset += blocks;
}

int clg__arg_slot(const clg_arg *args, int i)
{
    int slot = i;
    for (int j = 0; j < i; j++) slot += args[j].kind == CLG_ARG_RNG ? 3 : 0;
    return slot;
}

void clg_manual_seed(clg_device *dev, uint64_t seed) { clg_rng_set_state(dev, seed, 0); }

void clg_rng_get_state(const clg_device *dev, uint64_t *seed, uint64_t *offset)
{
    if (seed) *seed = dev ? dev->rng.seed : DEFAULT_SEED;
    if (offset) *offset = dev ? dev->rng.offset : 0;
}

void clg_rng_set_state(clg_device *dev, uint64_t seed, uint64_t offset)
{
    if (!dev) return;
    dev->rng.seed = seed;
    dev->rng.offset = offset;
}

void clg__rng_init(clg_device *dev) { clg_rng_set_state(dev, DEFAULT_SEED, 0); }
