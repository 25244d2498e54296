/* IDX (plain and gzip), CIFAR-10 and CSV readers on small synthetic files: the values
 * come back exactly, and corrupt inputs (every truncation, wrong magic numbers,
 * impossible dimensions, bad gzip streams, malformed CSV) fail with a message naming
 * the file and the problem. */
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "data_impl.h"

static char dir[] = "/tmp/clg_readers_XXXXXX";

static const char *path(const char *name)
{
    static char p[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void write_bytes(const char *p, const void *b, size_t n)
{
    FILE *f = fopen(p, "wb");
    CHECK(f && fwrite(b, 1, n, f) == n);
    if (f) fclose(f);
}

static void write_gz(const char *p, const void *b, size_t n)
{
    gzFile f = gzopen(p, "wb");
    CHECK(f && gzwrite(f, b, (unsigned)n) == (int)n);
    if (f) gzclose(f);
}

/* An IDX u8 file [3, 2, 5] with values i, and an i32 one [4] with big-endian -i. */
static size_t idx_u8(unsigned char *b)
{
    memcpy(b, (unsigned char[]){0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 5}, 16);
    for (int i = 0; i < 30; i++) b[16 + i] = (unsigned char)i;
    return 46;
}

static void idx(void)
{
    char err[512];
    unsigned char b[256];
    size_t n = idx_u8(b);
    clg_host_array a;
    write_bytes(path("a.idx"), b, n);
    write_gz(path("a.idx.gz"), b, n);
    for (int gz = 0; gz < 2; gz++) {
        CHECK_MSG(clg_idx_read(path(gz ? "a.idx.gz" : "a.idx"), &a, err, sizeof err) == CLG_OK, "%s", err);
        CHECK(a.type == CLG_ELEM_U8 && a.ndim == 3 && a.shape[0] == 3 && a.shape[1] == 2 && a.shape[2] == 5);
        CHECK(a.data && !memcmp(a.data, b + 16, 30));
        clg_host_array_free(&a);
    }
    unsigned char i32[] = {0, 0, 0x0C, 1, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xfe, 0, 0, 1, 0};
    CHECK(clg__idx_parse(i32, sizeof i32, "i", &a, err, sizeof err) == CLG_OK && a.type == CLG_ELEM_I32);
    CHECK(a.data && ((int32_t *)a.data)[0] == -2 && ((int32_t *)a.data)[1] == 256);
    clg_host_array_free(&a);

    /* Every truncation, plain and gzip. */
    for (size_t cut = 0; cut < n; cut++) {
        CHECK_MSG(clg__idx_parse(b, cut, "cut", &a, err, sizeof err) == CLG_ERR_FORMAT && !a.data, "cut %zu", cut);
        write_gz(path("cut.gz"), b, cut);
        CHECK_MSG(clg_idx_read(path("cut.gz"), &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "cut.gz"),
                  "gz cut %zu: %s", cut, err);
    }
    CHECK(clg__idx_parse(b, 40, "t", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "truncated") &&
          strstr(err, "[3, 2, 5]"));
    /* The compressed stream itself cut at every point: truncated gzip. */
    unsigned char *gz;
    size_t gzlen;
    CHECK(clg__read_file(path("a.idx.gz"), &gz, &gzlen, err, sizeof err) == CLG_OK);
    for (size_t cut = 2; cut < gzlen; cut++) {
        write_bytes(path("tgz.gz"), gz, cut);
        clg_status st = clg_idx_read(path("tgz.gz"), &a, err, sizeof err);
        CHECK_MSG(st == CLG_ERR_FORMAT && strstr(err, "tgz.gz") && (strstr(err, "gzip") || cut + 8 >= gzlen),
                  "gzip cut at %zu of %zu: %s", cut, gzlen, err);
    }
    /* A gzip bomb: the header promises 30 bytes, the stream inflates to 32 MB more. It is
     * refused one byte past the promise (it inflated to the end, up to 4 GiB, first). */
    size_t big = (size_t)32 << 20;
    unsigned char *bomb = calloc(n + big, 1);
    memcpy(bomb, b, n);
    write_gz(path("bomb.gz"), bomb, n + big);
    free(bomb);
    CHECK_MSG(clg_idx_read(path("bomb.gz"), &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "bomb.gz") &&
                  strstr(err, "inflates past 47 bytes"), "%s", err);
    /* Corrupt deflate data and a corrupt CRC. */
    gz[12] ^= 0x55;
    write_bytes(path("bad.gz"), gz, gzlen);
    CHECK(clg_idx_read(path("bad.gz"), &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "gzip"));
    gz[12] ^= 0x55;
    gz[gzlen - 6] ^= 1;
    write_bytes(path("crc.gz"), gz, gzlen);
    CHECK(clg_idx_read(path("crc.gz"), &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "gzip"));
    free(gz);

    unsigned char m[64];
    memcpy(m, b, n);
    m[0] = 1;
    CHECK(clg__idx_parse(m, n, "m", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "magic"));
    m[0] = 0, m[2] = 0x09;
    CHECK(clg__idx_parse(m, n, "m", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "0x09"));
    m[2] = 8, m[3] = 0;
    CHECK(clg__idx_parse(m, n, "m", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "axes"));
    m[3] = 200;
    CHECK(clg__idx_parse(m, n, "m", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "axes"));
    m[3] = 3, m[4] = 0xff;   /* 4 billion images of 2 x 5 */
    CHECK(clg__idx_parse(m, n, "m", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "truncated"));
    unsigned char huge[4 + 32] = {0, 0, 0x0E, 8};
    memset(huge + 4, 0xff, 32);   /* (2^32-1)^8 doubles: overflows */
    CHECK(clg__idx_parse(huge, sizeof huge, "h", &a, err, sizeof err) == CLG_ERR_FORMAT && !a.data);
    memcpy(m, b, n);
    m[n] = 7;
    CHECK(clg__idx_parse(m, n + 1, "m", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "after"));
    CHECK(clg_idx_read(path("nope.idx"), &a, err, sizeof err) == CLG_ERR_IO && strstr(err, "nope.idx"));

    /* A dataset from IDX images and labels; mismatched counts are refused. */
    unsigned char lab[] = {0, 0, 8, 1, 0, 0, 0, 3, 2, 0, 1};
    write_bytes(path("l.idx"), lab, sizeof lab);
    clg_dataset *ds;
    CHECK_MSG(clg_dataset_idx(path("a.idx.gz"), path("l.idx"), &ds, err, sizeof err) == CLG_OK, "%s", err);
    float x[10];
    int32_t y;
    CHECK(clg_dataset_length(ds) == 3 && clg_dataset_num_classes(ds) == 3 && clg_dataset_sample_numel(ds) == 10);
    CHECK(clg_dataset_get(ds, 2, x, &y, err, sizeof err) == CLG_OK && y == 1 && x[0] == 20 && x[9] == 29);
    CHECK(clg_dataset_get(ds, 3, x, &y, err, sizeof err) == CLG_ERR_INVALID_ARGUMENT);
    clg_dataset_free(ds);
    lab[7] = 4;
    unsigned char lab4[12];
    memcpy(lab4, lab, 11);
    lab4[11] = 0;
    write_bytes(path("l4.idx"), lab4, 12);
    CHECK(clg_dataset_idx(path("a.idx"), path("l4.idx"), &ds, err, sizeof err) == CLG_ERR_FORMAT && !ds &&
          strstr(err, "l4.idx"));
}

static void cifar(void)
{
    char err[512];
    enum { REC = 3073 };
    static unsigned char b[3 * REC + 10];
    for (int r = 0; r < 3; r++) {
        b[r * REC] = (unsigned char)(r * 4);
        for (int i = 0; i < 3072; i++) b[r * REC + 1 + i] = (unsigned char)(i * 7 + r);
    }
    write_bytes(path("c.bin"), b, 3 * REC);
    clg_host_array x, y;
    CHECK_MSG(clg_cifar10_read(path("c.bin"), &x, &y, err, sizeof err) == CLG_OK, "%s", err);
    CHECK(x.ndim == 4 && x.shape[0] == 3 && x.shape[1] == 3 && x.shape[2] == 32 && y.shape[0] == 3);
    CHECK(((unsigned char *)y.data)[2] == 8 && !memcmp((unsigned char *)x.data + 3072, b + REC + 1, 3072));
    clg_host_array_free(&x);
    clg_host_array_free(&y);
    const char *paths[2] = {path("c.bin"), path("c.bin")};
    clg_dataset *ds;
    CHECK(clg_dataset_cifar10(paths, 2, &ds, err, sizeof err) == CLG_OK && clg_dataset_length(ds) == 6);
    float s[3072];
    int32_t lab;
    CHECK(clg_dataset_get(ds, 4, s, &lab, err, sizeof err) == CLG_OK && lab == 4 && s[1] == 8);
    clg_dataset_free(ds);
    for (size_t cut = 1; cut < 3 * REC; cut += cut < 50 ? 1 : 997)
        CHECK(clg__cifar10_parse(b, cut, "cut.bin", &x, &y, err, sizeof err) == CLG_ERR_FORMAT && !x.data && !y.data &&
              strstr(err, "cut.bin"));
    CHECK(clg__cifar10_parse(b, 0, "e.bin", &x, &y, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "empty"));
    b[REC] = 10;
    CHECK(clg__cifar10_parse(b, 3 * REC, "l.bin", &x, &y, err, sizeof err) == CLG_ERR_FORMAT &&
          strstr(err, "record 1 has label 10"));
}

static void csv(void)
{
    char err[512];
    clg_host_array f, l;
    const char *good = "a,b,label\r\n1.5,-2,3\n\n4,5e1, 0 \n";
    CHECK_MSG(clg__csv_parse(good, strlen(good), "g.csv", NULL, &f, &l, err, sizeof err) == CLG_OK, "%s", err);
    CHECK(f.shape[0] == 2 && f.shape[1] == 2 && l.shape[0] == 2);
    CHECK(((float *)f.data)[0] == 1.5f && ((float *)f.data)[3] == 50 && ((int32_t *)l.data)[0] == 3 &&
          ((int32_t *)l.data)[1] == 0);
    clg_host_array_free(&f);
    clg_host_array_free(&l);
    /* No header, label first. */
    const char *nohdr = "7,1,2\n8,3,4";
    clg_csv_options o = {.label_column = 0, .header = -1};
    CHECK(clg__csv_parse(nohdr, strlen(nohdr), "n.csv", &o, &f, &l, err, sizeof err) == CLG_OK && f.shape[0] == 2 &&
          ((int32_t *)l.data)[1] == 8 && ((float *)f.data)[3] == 4);
    clg_host_array_free(&f);
    clg_host_array_free(&l);
    o.header = 1;   /* forced: the first line is skipped although numeric */
    CHECK(clg__csv_parse(nohdr, strlen(nohdr), "n.csv", &o, &f, &l, err, sizeof err) == CLG_OK && f.shape[0] == 1);
    clg_host_array_free(&f);
    clg_host_array_free(&l);
    static const struct { const char *text, *expect; } bad[] = {
        {"", "no data rows"},
        {"a,b\n", "no data rows"},
        {"1,2\n3\n", "line 2 has 1 fields"},
        {"1,2\n3,4,5\n", "line 2 has 3 fields"},
        {"1,2\nx,4\n", "line 2, column 1: 'x' is not a finite number"},
        {"1,2\n3,-1\n", "label '-1'"},
        {"1,2\n3,1.5\n", "label '1.5'"},
        {"1,2\n3,99999999999\n", "label"},
        {"1,2\nnan,1\n", "finite"},
        {"1,2\n1e999,1\n", "finite"},
        {"1,2\n,1\n", "column 1"},
        {"5\n6\n", "1 column"},
        {"1,2\n1111111111111111111111111111111111111111111111111111111111111111111111,1\n", "too long"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        clg_status st = clg__csv_parse(bad[i].text, strlen(bad[i].text), "bad.csv", NULL, &f, &l, err, sizeof err);
        CHECK_MSG(st == CLG_ERR_FORMAT && strstr(err, bad[i].expect) && strstr(err, "bad.csv") && !f.data && !l.data,
                  "'%s' gave '%s'", bad[i].text, err);
    }
    o = (clg_csv_options){.label_column = 5, .header = 0};
    CHECK(clg__csv_parse(nohdr, strlen(nohdr), "n.csv", &o, &f, &l, err, sizeof err) == CLG_ERR_INVALID_ARGUMENT);
    write_bytes(path("d.csv"), "x,y\n0.5,1\n0.25,2\n", 17);
    clg_dataset *ds;
    CHECK_MSG(clg_dataset_csv(path("d.csv"), NULL, &ds, err, sizeof err) == CLG_OK, "%s", err);
    float v;
    int32_t y;
    CHECK(clg_dataset_length(ds) == 2 && clg_dataset_num_classes(ds) == 3 &&
          clg_dataset_get(ds, 1, &v, &y, err, sizeof err) == CLG_OK && v == 0.25f && y == 2);
    clg_dataset_free(ds);
    write_bytes(path("z.csv"), "1,2\n3\0,4\n", 9);
    CHECK(clg_csv_read(path("z.csv"), NULL, &f, &l, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "NUL"));
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    idx();
    cifar();
    csv();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return check_report("test_data_readers");
}
