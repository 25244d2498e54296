/* libFuzzer target: the safetensors reader (src/io/safetensors_read.c). Whatever it
 * accepts must be consistent (every tensor inside the buffer, sizes agreeing, lookups
 * finding it), and writing it again (safetensors_header.c) must give a file that parses
 * back to the same tensors and metadata. */
#include <stdlib.h>
#include <string.h>

#include "io/st_format.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void check_consistent(const clg_safetensors *st, const unsigned char *data, size_t size)
{
    for (int i = 0; i < clg_safetensors_count(st); i++) {
        const clg_safetensors_entry *t = clg_safetensors_at(st, i);
        const unsigned char *p = t->data;
        uint64_t numel = 1;
        for (int d = 0; d < t->ndim; d++) numel *= (uint64_t)t->shape[d];
        if (numel != (uint64_t)t->numel || t->bytes != numel * clg_elem_size(t->dtype)) abort();
        if (p < data + 8 || p > data + size || t->bytes > (size_t)(data + size - p)) abort();
        if (clg_safetensors_find(st, t->name) != t) abort();
        if (i > 0 && (const unsigned char *)clg_safetensors_at(st, i - 1)->data > p) abort();   /* data order */
    }
    for (int i = 0; i < clg_safetensors_meta_count(st); i++) {
        const char *k, *v;
        if (!clg_safetensors_meta_at(st, i, &k, &v) || clg_safetensors_meta(st, k) != v) abort();
    }
}

/* Write what was read and read it again. */
static void check_round_trip(const clg_safetensors *st)
{
    int n = clg_safetensors_count(st), nm = clg_safetensors_meta_count(st);
    clg__st_item *items = calloc((size_t)n + 1, sizeof *items);
    clg_safetensors_pair *meta = calloc((size_t)nm + 1, sizeof *meta);
    if (!items || !meta) abort();
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const clg_safetensors_entry *t = clg_safetensors_at(st, i);
        items[i] = (clg__st_item){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .host = t->data};
        memcpy(items[i].shape, t->shape, sizeof t->shape);
        total += t->bytes;
    }
    for (int i = 0; i < nm; i++) clg_safetensors_meta_at(st, i, &meta[i].key, &meta[i].value);
    char *header, err[256];
    size_t hlen;
    if (clg__st_header(n, items, nm, meta, &header, &hlen, err, sizeof err) != CLG_OK) abort();
    unsigned char *file = malloc(8 + hlen + total);
    if (!file) abort();
    for (int b = 0; b < 8; b++) file[b] = (unsigned char)((uint64_t)hlen >> (8 * b));
    memcpy(file + 8, header, hlen);
    size_t at = 8 + hlen;
    for (int i = 0; i < n; i++) {
        const clg_safetensors_entry *t = clg_safetensors_at(st, i);
        if (t->bytes) memcpy(file + at, t->data, t->bytes);
        at += t->bytes;
    }
    clg_safetensors *again;
    if (clg_safetensors_parse(file, at, "again", &again, err, sizeof err) != CLG_OK) abort();
    if (clg_safetensors_count(again) != n || clg_safetensors_meta_count(again) != nm) abort();
    for (int i = 0; i < n; i++) {
        const clg_safetensors_entry *a = clg_safetensors_at(st, i), *b = clg_safetensors_at(again, i);
        if (strcmp(a->name, b->name) || a->dtype != b->dtype || a->ndim != b->ndim || a->bytes != b->bytes ||
            memcmp(a->shape, b->shape, sizeof a->shape) || (a->bytes && memcmp(a->data, b->data, a->bytes)))
            abort();
    }
    for (int i = 0; i < nm; i++) {
        const char *v = clg_safetensors_meta(again, meta[i].key);
        if (!v || strcmp(v, meta[i].value)) abort();
    }
    clg_safetensors_close(again);
    free(file);
    free(header);
    free(meta);
    free(items);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char err[256];
    clg_safetensors *st;
    if (clg_safetensors_parse(data, size, "fuzz.safetensors", &st, err, sizeof err) != CLG_OK) {
        if (st != NULL || !strstr(err, "fuzz.safetensors: ")) abort();   /* refusals say why */
        return 0;
    }
    check_consistent(st, data, size);
    check_round_trip(st);
    clg_safetensors_close(st);
    return 0;
}
