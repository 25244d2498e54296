/* crc32c.h: CRC-32C (Castagnoli), the checksum of TensorBoard's (TFRecord's) record
 * framing. zlib's and libdeflate's crc32 use the other polynomial, and neither library
 * offers this one. */
#ifndef CLGRAD_CRC32C_H
#define CLGRAD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of n bytes ("123456789" gives 0xE3069283). */
uint32_t clg__crc32c(const void *data, size_t n);
/* The masked form TFRecord stores: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a
 * CRC of data that holds CRCs is not a CRC of a CRC. */
uint32_t clg__crc32c_masked(const void *data, size_t n);

#endif
