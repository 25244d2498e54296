/* tb_record.c: the Event protocol buffer written by hand (four field kinds: varints,
 * length-delimited bytes, fixed64 double, fixed32 float), so that TensorBoard output
 * needs neither protoc nor the optional ONNX build's protobuf-c. Field numbers from
 * tensorflow/core/util/event.proto and framework/summary.proto: Event{wall_time = 1,
 * step = 2, file_version = 3, summary = 5, session_log = 7}, Summary{value = 1},
 * Summary.Value{tag = 1, simple_value = 2}, SessionLog{status = 1, START = 1}. */
#include <stdlib.h>
#include <string.h>

#include "io/crc32c.h"
#include "tb_record.h"

enum { VARINT = 0, FIXED64 = 1, BYTES = 2, FIXED32 = 5 };

static void put(clg__tb_buf *b, const void *data, size_t n)
{
    if (b->oom || n == 0) return;   /* n == 0: data may be an empty buffer's NULL */
    if (b->len + n > b->cap) {
        size_t cap = 2 * (b->len + n) + 64;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void varint(clg__tb_buf *b, uint64_t v)
{
    unsigned char s[10];
    size_t n = 0;
    for (; v >= 0x80; v >>= 7) s[n++] = (unsigned char)(v | 0x80);
    s[n++] = (unsigned char)v;
    put(b, s, n);
}

static void key(clg__tb_buf *b, unsigned field, unsigned kind) { varint(b, (uint64_t)field << 3 | kind); }

/* Little-endian whatever the host: n bytes of v. */
static void fixed(clg__tb_buf *b, uint64_t v, size_t n)
{
    unsigned char s[8];
    for (size_t i = 0; i < n; i++) s[i] = (unsigned char)(v >> (8 * i));
    put(b, s, n);
}

static void bytes_field(clg__tb_buf *b, unsigned field, const void *data, size_t n)
{
    key(b, field, BYTES);
    varint(b, n);
    put(b, data, n);
}

static void summary_value(clg__tb_buf *b, const char *tag, float value)
{
    clg__tb_buf v = {0};
    uint32_t bits;
    memcpy(&bits, &value, 4);
    bytes_field(&v, 1, tag, strlen(tag));
    key(&v, 2, FIXED32);
    fixed(&v, bits, 4);
    if (v.oom) b->oom = true;
    else bytes_field(b, 1, v.p, v.len);
    clg__tb_buf_free(&v);
}

static void event(const clg__tb_event *e, clg__tb_buf *b)
{
    uint64_t bits;
    memcpy(&bits, &e->wall_time, 8);
    key(b, 1, FIXED64);
    fixed(b, bits, 8);
    if (e->step) key(b, 2, VARINT), varint(b, (uint64_t)e->step);   /* proto3: 0 is left out */
    if (e->file_version) bytes_field(b, 3, e->file_version, strlen(e->file_version));
    if (e->n > 0) {
        clg__tb_buf s = {0};
        for (int i = 0; i < e->n; i++) summary_value(&s, e->tags[i], e->values[i]);
        if (s.oom) b->oom = true;
        else bytes_field(b, 5, s.p, s.len);
        clg__tb_buf_free(&s);
    }
    if (e->session_start) bytes_field(b, 7, (const unsigned char[]){1 << 3 | VARINT, 1}, 2);
}

bool clg__tb_record(const clg__tb_event *e, clg__tb_buf *out)
{
    clg__tb_buf data = {0};
    event(e, &data);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)data.len >> (8 * i));
    put(out, len, 8);
    fixed(out, clg__crc32c_masked(len, 8), 4);
    put(out, data.p, data.len);
    fixed(out, clg__crc32c_masked(data.p, data.len), 4);
    bool ok = !data.oom && !out->oom;
    clg__tb_buf_free(&data);
    return ok;
}

void clg__tb_buf_free(clg__tb_buf *b)
{
    free(b->p);
    *b = (clg__tb_buf){0};
}
