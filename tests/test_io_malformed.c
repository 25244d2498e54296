/* test_io_malformed: the safetensors reader against crafted files. Each malformed file
 * must be refused with CLG_ERR_FORMAT and a message naming the file and the problem;
 * the valid oddities (unsorted header, empty tensors, no metadata, null metadata) must
 * be accepted. Needs no device: the reader is host code. */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

#include "check.h"
#include "io/io_util.h"

#define LEN UINT64_MAX   /* the header's real length */

typedef struct bad_case {
    const char *what;
    uint64_t hlen;          /* the length field (LEN: the header's) */
    const char *header;
    size_t datalen;         /* bytes of data after the header */
    const char *expect;     /* part of the message */
} bad_case;

static const bad_case bad_cases[] = {
    {"header length past the file", 1000, "{}", 0, "runs past the end of the file"},
    {"header length past the file by one", 3, "{}", 0, "runs past the end of the file"},
    {"huge header length", (uint64_t)1 << 40, "{}", 0, "over the limit of 100000000"},
    {"header length just over the cap", 100000001, "{}", 0, "over the limit"},
    {"header length 2^64-2", UINT64_MAX - 1, "{}", 0, "over the limit"},
    {"empty header", 0, "", 0, "does not start with '{'"},
    {"header starts with a space", LEN, " {}", 0, "does not start with '{'"},
    {"header is an array", LEN, "[]", 0, "does not start with '{'"},
    {"invalid JSON", LEN, "{\"a\":", 0, "not valid JSON"},
    {"trailing junk after the object", LEN, "{} x", 0, "not valid JSON"},
    {"duplicate keys", LEN,
     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
     "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2, "duplicate"},
    {"duplicate metadata keys", LEN, "{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, "duplicate"},
    {"integer too big for JSON", LEN,
     "{\"a\":{\"dtype\":\"U8\",\"shape\":[99999999999999999999],\"data_offsets\":[0,1]}}", 1, "not valid JSON"},
    {"invalid UTF-8 name", LEN, "{\"\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     "not valid JSON"},
    {"tensor not an object", LEN, "{\"a\":3}", 0, "tensor \"a\" is an integer, not an object"},
    {"unknown dtype", LEN, "{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "unknown dtype \"F33\""},
    {"lower-case dtype", LEN, "{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype"},
    {"dtype not a string", LEN, "{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "dtype is an integer, not a string"},
    {"no shape", LEN, "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor \"a\": no shape"},
    {"no data_offsets", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "no data_offsets"},
    {"unknown field", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4,
     "unknown field \"x\""},
    {"shape not an array", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,4]}}", 4,
     "shape is an integer, not an array"},
    {"negative dimension", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
     "shape[0] is a negative integer"},
    {"float dimension", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4,
     "shape[0] is a number with a fraction or exponent"},
    {"exponent dimension", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}", 4,
     "shape[0] is a number"},
    {"string dimension", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4,
     "shape[0] is a string"},
    {"rank 9", LEN, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
     "9 dimensions, more than the 8"},
    {"element count overflow", LEN,
     "{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,0]}}", 0,
     "element count overflows"},
    {"byte count overflow", LEN,
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,0]}}", 0, "byte count overflows"},
    {"wrong dtype size", LEN, "{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
     "hold 8 bytes, but 2 elements of F64 need 16"},
    {"byte range one short", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,23]}}", 23,
     "hold 23 bytes, but 6 elements of F32 need 24"},
    {"data_offsets of one integer", LEN, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", 1,
     "not an array of two integers"},
    {"data_offsets not an array", LEN, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":\"0,1\"}}", 1,
     "data_offsets is a string"},
    {"float offset", LEN, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1.0]}}", 1,
     "data_offsets[1] is a number with a fraction"},
    {"negative offset", LEN, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", 1,
     "data_offsets[0] is a negative integer"},
    {"end before begin", LEN, "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4,
     "end before they begin"},
    {"range out of bounds", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
     "lie beyond the 8 bytes of data"},
    {"truncated data", LEN,
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 12, "truncated"},
    {"overlapping ranges", LEN,
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap those of \"a\""},
    {"two tensors on the same bytes", LEN,
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "overlap"},
    {"gap between ranges", LEN,
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20, "a gap of 4 unused bytes"},
    {"data not starting at 0", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
     "a gap of 4 unused bytes"},
    {"trailing bytes", LEN, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 5,
     "1 trailing bytes"},
    {"data and no tensors", LEN, "{}", 3, "3 trailing bytes"},
    {"metadata value a number", LEN, "{\"__metadata__\":{\"epoch\":3}}", 0,
     "__metadata__ \"epoch\" is an integer: metadata values must be strings"},
    {"metadata value an object", LEN, "{\"__metadata__\":{\"model\":{\"layers\":[]}}}", 0,
     "metadata values must be strings"},
    {"metadata an array", LEN, "{\"__metadata__\":[\"a\"]}", 0, "__metadata__ is an array, not an object"},
    {"metadata a string", LEN, "{\"__metadata__\":\"a\"}", 0, "__metadata__ is a string"},
};

static void check_bad(const bad_case *c)
{
    size_t len;
    unsigned char *b = io_st_bytes(c->hlen, c->header, strlen(c->header), NULL, c->datalen, &len);
    char err[512] = "";
    clg_safetensors *st = (clg_safetensors *)&len;   /* must be reset to NULL */
    clg_status s = clg_safetensors_parse(b, len, "crafted.safetensors", &st, err, sizeof err);
    CHECK_MSG(s == CLG_ERR_FORMAT && st == NULL, "%s: accepted (status %s)", c->what, clg_status_str(s));
    CHECK_MSG(strstr(err, "crafted.safetensors: ") == err && strstr(err, c->expect),
              "%s: message \"%s\" lacks \"%s\"", c->what, err, c->expect);
    if (s == CLG_OK) clg_safetensors_close(st);
    if (getenv("IO_TEST_VERBOSE")) printf("%-36s %s\n", c->what, err);   /* to read the messages */
    free(b);
}

/* Files too short for the length, and bytes that are not text at all. */
static void check_short_and_binary(void)
{
    char err[256];
    clg_safetensors *st;
    static const unsigned char five[5] = {1, 0, 0, 0, 0};
    CHECK(clg_safetensors_parse(five, 0, "empty", &st, err, sizeof err) == CLG_ERR_FORMAT && st == NULL);
    CHECK_MSG(strstr(err, "0 bytes, too short for the 8-byte header length"), "%s", err);
    CHECK(clg_safetensors_parse(five, 5, "five", &st, err, sizeof err) == CLG_ERR_FORMAT);
    CHECK_MSG(strstr(err, "five: not a safetensors file: 5 bytes, too short"), "%s", err);
    /* a NUL inside the header */
    static const char nul_header[] = "{\"a\0\":{}}";
    size_t len;
    unsigned char *b = io_st_bytes(LEN, nul_header, sizeof nul_header - 1, NULL, 0, &len);
    CHECK(clg_safetensors_parse(b, len, "nul", &st, err, sizeof err) == CLG_ERR_FORMAT);
    CHECK_MSG(strstr(err, "not valid JSON"), "%s", err);
    free(b);
    /* nesting deeper than any header needs: refused by the parser, not the stack */
    char deep[6000];
    size_t n = 0;
    n += (size_t)sprintf(deep, "{\"a\":{\"dtype\":\"U8\",\"shape\":");
    for (int i = 0; i < 2500; i++) deep[n++] = '[';
    for (int i = 0; i < 2500; i++) deep[n++] = ']';
    n += (size_t)sprintf(deep + n, ",\"data_offsets\":[0,0]}}");
    b = io_st_bytes(LEN, deep, n, NULL, 0, &len);
    CHECK(clg_safetensors_parse(b, len, "deep", &st, err, sizeof err) == CLG_ERR_FORMAT);
    free(b);
}

/* What the reference accepts must be accepted, and read correctly. */
static void check_valid_oddities(void)
{
    char err[512] = "";
    clg_safetensors *st;
    /* Header order differs from data order; zero-size tensors; a 0-d tensor; the
     * header not padded to 8 bytes; metadata last. */
    const char *h = "{\"late\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                    "\"empty\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[8,8]},"
                    "\"early\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]},"
                    "\"__metadata__\":{\"k\":\"v\",\"\":\"empty key\"}}";
    unsigned char data[16];
    double d = 2.5;
    int32_t ints[2] = {-7, 9};
    memcpy(data, &d, 8);
    memcpy(data + 8, ints, 8);
    size_t len;
    unsigned char *b = io_st_bytes(LEN, h, strlen(h), data, sizeof data, &len);
    clg_status s = clg_safetensors_parse(b, len, "ok", &st, err, sizeof err);
    CHECK_MSG(s == CLG_OK, "unsorted valid file refused: %s", err);
    if (s == CLG_OK) {
        CHECK(clg_safetensors_count(st) == 3);
        /* in data order: early [0,8], empty [8,8], late [8,16] */
        CHECK(!strcmp(clg_safetensors_at(st, 0)->name, "early"));
        CHECK(!strcmp(clg_safetensors_at(st, 1)->name, "empty"));
        CHECK(!strcmp(clg_safetensors_at(st, 2)->name, "late"));
        CHECK(clg_safetensors_at(st, 3) == NULL && clg_safetensors_at(st, -1) == NULL);
        const clg_safetensors_entry *e = clg_safetensors_find(st, "early"), *l = clg_safetensors_find(st, "late");
        CHECK(e && e->ndim == 0 && e->numel == 1 && e->dtype == CLG_ELEM_F64 && e->bytes == 8);
        double got;
        if (e) memcpy(&got, e->data, 8);
        CHECK(e && got == 2.5);
        CHECK(l && l->ndim == 1 && l->shape[0] == 2 && !memcmp(l->data, ints, 8));
        const clg_safetensors_entry *z = clg_safetensors_find(st, "empty");
        CHECK(z && z->numel == 0 && z->bytes == 0 && z->ndim == 2 && z->shape[1] == 3);
        CHECK(clg_safetensors_find(st, "missing") == NULL && clg_safetensors_find(st, "__metadata__") == NULL);
        CHECK(clg_safetensors_meta_count(st) == 2);
        CHECK(clg_safetensors_meta(st, "k") && !strcmp(clg_safetensors_meta(st, "k"), "v"));
        CHECK(clg_safetensors_meta(st, "") && !strcmp(clg_safetensors_meta(st, ""), "empty key"));
        CHECK(clg_safetensors_meta(st, "nope") == NULL);
        clg_safetensors_close(st);
    }
    free(b);
    /* no tensors at all; null metadata; padding spaces (and other JSON whitespace) */
    const char *valid[] = {"{}", "{\"__metadata__\":null}", "{}      ", "{\"__metadata__\":{}}\n\t "};
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        b = io_st_bytes(LEN, valid[i], strlen(valid[i]), NULL, 0, &len);
        s = clg_safetensors_parse(b, len, "ok", &st, err, sizeof err);
        CHECK_MSG(s == CLG_OK && clg_safetensors_count(st) == 0, "\"%s\" refused: %s", valid[i], err);
        clg_safetensors_close(st);
        free(b);
    }
}

/* The same rules through a file: a missing file, a directory, a truncated copy. */
/* A header of 300,000 empty tensors (18 MB, well under the 100 MB header limit) is
 * refused by its tensor count before any JSON is parsed: 1.5 M of them cost 19 s and
 * 2.25 GB. Time bounded by the test's own timeout. */
static void check_many_tensors(void)
{
    const int n = CLG_SAFETENSORS_MAX_TENSORS + 40000;
    size_t cap = (size_t)n * 64 + 16, hl = 0;
    char *h = malloc(cap);
    h[hl++] = '{';
    for (int i = 0; i < n; i++)
        hl += (size_t)snprintf(h + hl, cap - hl, "%s\"t%d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}",
                               i ? "," : "", i);
    h[hl++] = '}';
    size_t len;
    unsigned char *b = io_st_bytes(LEN, h, hl, NULL, 0, &len);
    char err[512] = "";
    clg_safetensors *st = NULL;
    CHECK_MSG(clg_safetensors_parse(b, len, "many.safetensors", &st, err, sizeof err) == CLG_ERR_FORMAT && !st &&
                  strstr(err, "more than 262144 tensors"), "%s", err);
    free(b);
    free(h);
}

static void check_files(void)
{
    char *dir = io_tmpdir("malformed");
    char err[512];
    clg_safetensors *st;
    char *missing = io_path(dir, "missing.safetensors");
    CHECK(clg_safetensors_open(missing, &st, err, sizeof err) == CLG_ERR_IO && st == NULL);
    CHECK_MSG(strstr(err, missing) && strstr(err, "cannot open"), "%s", err);
    CHECK(clg_safetensors_open(dir, &st, err, sizeof err) == CLG_ERR_IO);
    CHECK_MSG(strstr(err, "is a directory"), "%s", err);
    const char *h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    size_t len;
    unsigned char *b = io_st_bytes(LEN, h, strlen(h), NULL, 16, &len);
    char *path = io_path(dir, "cut.safetensors");
    io_write_file(path, b, len);
    CHECK(clg_safetensors_open(path, &st, err, sizeof err) == CLG_OK);
    clg_safetensors_close(st);
    for (size_t cut = 1; cut < len; cut += 5) {   /* every truncation is refused */
        io_write_file(path, b, len - cut);
        CHECK_MSG(clg_safetensors_open(path, &st, err, sizeof err) == CLG_ERR_FORMAT && st == NULL,
                  "cut by %zu accepted", cut);
        CHECK_MSG(strstr(err, path), "%s", err);
    }
    free(b);
    free(path);
    free(missing);
    /* Not regular files: a device grew the buffer without end and a FIFO blocked the open
     * for ever; both are refused at once (a blocked open would hang this test), by every
     * reader of files: safetensors, model files, IDX, NumPy, CSV. */
    char *fifo = io_path(dir, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    const char *specials[] = {"/dev/urandom", "/dev/zero", fifo};
    for (int i = 0; i < 3; i++) {
        const char *p = specials[i];
        clg_host_array a = {0}, y = {0};
        clg_model *m = NULL;
        CHECK_MSG(clg_safetensors_open(p, &st, err, sizeof err) == CLG_ERR_IO && strstr(err, "not a regular file"),
                  "%s: %s", p, err);
        CHECK_MSG(clg_model_read(p, &m, err, sizeof err) == CLG_ERR_IO && strstr(err, "not a regular file"), "%s: %s",
                  p, err);
        CHECK_MSG(clg_idx_read(p, &a, err, sizeof err) == CLG_ERR_IO && strstr(err, "not a regular file"), "%s: %s", p,
                  err);
        CHECK_MSG(clg_npy_read(p, &a, err, sizeof err) == CLG_ERR_IO && strstr(err, "not a regular file"), "%s: %s", p,
                  err);
        CHECK_MSG(clg_csv_read(p, NULL, &a, &y, err, sizeof err) == CLG_ERR_IO && strstr(err, "not a regular file"),
                  "%s: %s", p, err);
    }
    unlink(fifo);
    free(fifo);
    io_rmdir(dir);
}

int main(void)
{
    size_t n = sizeof bad_cases / sizeof bad_cases[0];
    for (size_t i = 0; i < n; i++) check_bad(&bad_cases[i]);
    printf("%zu crafted malformed headers\n", n);
    check_short_and_binary();
    check_valid_oddities();
    check_files();
    check_many_tensors();
    return check_report("test_io_malformed");
}
