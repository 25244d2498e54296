/* crc32c.c: CRC-32C, byte at a time from a 256-entry table of the reflected polynomial
 * 0x82F63B78. Event files are a few records per training step, so a byte a cycle is
 * plenty; the table is built once, thread-safely. */
#include <pthread.h>

#include "crc32c.h"

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
}

uint32_t clg__crc32c(const void *data, size_t n)
{
    pthread_once(&table_once, build_table);
    const unsigned char *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t clg__crc32c_masked(const void *data, size_t n)
{
    uint32_t c = clg__crc32c(data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
