/* loader_order.c: the order of samples in an epoch, a pure function of (seed, epoch,
 * position), so that any thread computes any batch without shared state, and a
 * checkpoint needs only (seed, epoch, batch) to resume.
 *
 * The order is a keyed Feistel network over the smallest even number of bits that
 * covers n, with cycle-walking (positions that map past n are mapped again) to stay
 * inside [0, n): a bijection, so every sample appears exactly once per epoch. */
#include "data_impl.h"

static uint64_t fmix(uint64_t z)   /* SplitMix64's finaliser */
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t clg__mix3(uint64_t a, uint64_t b, uint64_t c)
{
    return fmix(fmix(fmix(a) ^ b) ^ c);
}

#define ROUNDS 6

int64_t clg__shuffle_index(uint64_t seed, uint64_t epoch, int64_t n, int64_t pos)
{
    if (n <= 1) return 0;
    int bits = 2;
    while (bits < 64 && ((uint64_t)1 << bits) < (uint64_t)n) bits += 2;
    int half = bits / 2;
    uint64_t mask = ((uint64_t)1 << half) - 1;
    uint64_t key[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) key[r] = clg__mix3(seed, epoch, 0x5eed0000u + (uint64_t)r);
    uint64_t x = (uint64_t)pos;
    do {   /* at most 4x the domain on average: the domain is < 4n */
        uint64_t l = x >> half, rr = x & mask;
        for (int r = 0; r < ROUNDS; r++) {
            uint64_t t = rr;
            rr = l ^ (fmix(rr ^ key[r]) & mask);
            l = t;
        }
        x = l << half | rr;
    } while (x >= (uint64_t)n);
    return (int64_t)x;
}
