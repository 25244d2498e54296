/* tb_record.h: one record of a TensorBoard event file, as bytes: an Event protocol
 * buffer (tensorflow/core/util/event.proto) in TFRecord framing (tb_record.c). */
#ifndef CLGRAD_TB_RECORD_H
#define CLGRAD_TB_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct clg__tb_buf {
    unsigned char *p;
    size_t len, cap;
    bool oom;                      /* an allocation failed: the contents are incomplete */
} clg__tb_buf;

/* An Event: its time and step, and one of: the file's version string, n scalars
 * (Summary values of tag and simple_value), or a SessionLog START. */
typedef struct clg__tb_event {
    double wall_time;
    int64_t step;
    const char *file_version;      /* non-NULL: the file's first record */
    int n;
    const char *const *tags;
    const float *values;
    bool session_start;
} clg__tb_event;

/* Append the framed record of e to out: uint64 length (little-endian), its masked
 * CRC-32C, the serialized Event, the data's masked CRC-32C. False when out of memory. */
bool clg__tb_record(const clg__tb_event *e, clg__tb_buf *out);
void clg__tb_buf_free(clg__tb_buf *b);

#endif
