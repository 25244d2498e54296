/* TensorBoard event files (clgrad/tensorboard.h): CRC-32C against published vectors,
 * one record's bytes as written out by hand, a file read back record by record with
 * its checksums, and the failures (a directory that cannot be made, a write that
 * fails, bad arguments) as statuses naming the path. TensorBoard's own reader reads
 * `clgrad train --tensorboard` output in tests/cli/cli_tensorboard.sh. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "io/crc32c.h"
#include "train/tb_record.h"

static void crc_vectors(void)
{
    unsigned char zeros[32] = {0}, ones[32], up[32];
    for (int i = 0; i < 32; i++) ones[i] = 0xFF, up[i] = (unsigned char)i;
    CHECK(clg__crc32c("123456789", 9) == 0xE3069283u);   /* the check value of CRC-32C */
    CHECK(clg__crc32c("", 0) == 0);
    CHECK(clg__crc32c(zeros, 32) == 0x8A9136AAu);        /* RFC 3720, B.4 */
    CHECK(clg__crc32c(ones, 32) == 0x62A8AB43u);
    CHECK(clg__crc32c(up, 32) == 0x46DD794Eu);
    CHECK(clg__crc32c_masked("123456789", 9) == 0xC78AB0E5u);   /* rotated right 15, plus 0xa282ead8 */
}

/* Event{wall_time 1.5, step 3, summary {value {tag "a", simple_value 2}}}, framed. */
static void one_record(void)
{
    static const unsigned char want[] = {
        0x17, 0, 0, 0, 0, 0, 0, 0,                    /* 23 bytes of data, little-endian */
        0xe7, 0xce, 0xf8, 0x1e,                       /* masked CRC-32C of those 8 bytes */
        0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f,           /* field 1, fixed64: 1.5 */
        0x10, 0x03,                                   /* field 2, varint: step 3 */
        0x2a, 0x0a,                                   /* field 5, 10 bytes: Summary */
        0x0a, 0x08,                                   /*   value, 8 bytes */
        0x0a, 0x01, 'a',                              /*     tag "a" */
        0x15, 0, 0, 0, 0x40,                          /*     simple_value, fixed32: 2.0f */
        0xe8, 0x1c, 0x3a, 0x9d};                      /* masked CRC-32C of the data */
    const char *tags[] = {"a"};
    float values[] = {2.0f};
    clg__tb_buf b = {0};
    CHECK(clg__tb_record(&(clg__tb_event){.wall_time = 1.5, .step = 3, .n = 1, .tags = tags, .values = values}, &b));
    CHECK_MSG(b.len == sizeof want && !memcmp(b.p, want, sizeof want), "%zu bytes, want %zu", b.len, sizeof want);
    clg__tb_buf_free(&b);
    /* SessionLog{status START} is field 7 (0x3a), 2 bytes: field 1 varint 1 */
    CHECK(clg__tb_record(&(clg__tb_event){.wall_time = 1.5, .step = 3, .session_start = true}, &b));
    CHECK(b.len == 12 + 15 + 4 && b.p[12 + 11] == 0x3a && b.p[12 + 12] == 2 && b.p[12 + 13] == 0x08 && b.p[12 + 14] == 1);
    clg__tb_buf_free(&b);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *p = malloc(1 << 16);
    *len = p ? fread(p, 1, 1 << 16, f) : 0;
    fclose(f);
    return p;
}

/* Where s first occurs in the n bytes at p, or NULL. */
static const unsigned char *find(const unsigned char *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(p + i, s, k)) return p + i;
    return NULL;
}

static uint32_t le32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* Walk the records, checking both CRCs of each; returns their number, -1 on a bad one. */
static int count_records(const unsigned char *p, size_t len)
{
    int n = 0;
    for (size_t at = 0; at < len; n++) {
        if (len - at < 12) return -1;
        uint64_t dl = 0;
        for (int i = 0; i < 8; i++) dl |= (uint64_t)p[at + i] << (8 * i);
        if (le32(p + at + 8) != clg__crc32c_masked(p + at, 8) || len - at - 12 < dl + 4) return -1;
        if (le32(p + at + 12 + dl) != clg__crc32c_masked(p + at + 12, dl)) return -1;
        at += 12 + dl + 4;
    }
    return n;
}

static void write_and_read(const char *dir)
{
    char logdir[512];
    snprintf(logdir, sizeof logdir, "%s/runs/a/b", dir);   /* parents made too */
    clg_tensorboard *tb, *tb2;
    char err[512] = "";
    CHECK_MSG(clg_tensorboard_open(logdir, &tb, err, sizeof err) == CLG_OK, "%s", err);
    CHECK_MSG(clg_tensorboard_open(logdir, &tb2, err, sizeof err) == CLG_OK, "%s", err);   /* its own file */
    if (!tb || !tb2) return;
    CHECK(strcmp(clg_tensorboard_path(tb), clg_tensorboard_path(tb2)) != 0);
    CHECK(strstr(clg_tensorboard_path(tb), "/runs/a/b/events.out.tfevents.") != NULL);
    CHECK(clg_tensorboard_scalar(tb, "train/loss", 1, 2.5) == CLG_OK);
    clg_metrics_row row = {1, 10, 0.5, 0.75, NAN, NAN, 100, 0.01};
    CHECK(clg_tensorboard_metrics(tb, &row) == CLG_OK);
    CHECK(clg_tensorboard_restart(tb, 5) == CLG_OK);
    size_t len = 0;   /* written through before each call returned: read before the close */
    unsigned char *p = slurp(clg_tensorboard_path(tb), &len);
    CHECK(p && count_records(p, len) == 4);
    CHECK(p && len > 40 && find(p, len, "brain.Event:2") == p + 12 + 11);   /* after wall_time */
    CHECK(p && find(p, len, "epoch/train_acc") && !find(p, len, "epoch/test_loss"));   /* NaN left out */
    free(p);
    /* bad arguments: a status and a message, nothing written */
    CHECK(clg_tensorboard_scalar(tb, "", 1, 1.0) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(strstr(clg_tensorboard_error(tb), "has no tag") != NULL);
    CHECK(clg_tensorboard_scalars(tb, 1, 0, NULL, NULL) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_tensorboard_scalar(NULL, "x", 1, 1.0) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_tensorboard_close(tb) == CLG_OK && clg_tensorboard_close(tb2) == CLG_OK && clg_tensorboard_close(NULL) == CLG_OK);
}

static void failures(const char *dir)
{
    char file[512], bad[600], err[512] = "";
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    CHECK(f && fclose(f) == 0);
    snprintf(bad, sizeof bad, "%s/sub", file);   /* under a regular file: no directory can be made */
    clg_tensorboard *tb = (clg_tensorboard *)1;
    CHECK(clg_tensorboard_open(bad, &tb, err, sizeof err) == CLG_ERR_IO && tb == NULL);
    CHECK_MSG(strstr(err, bad) && strstr(err, "cannot create the directory"), "%s", err);
    CHECK(!strcmp(clg_last_error(), err));
    CHECK(clg_tensorboard_open(file, &tb, err, sizeof err) == CLG_ERR_IO);   /* a file, not a directory */
    CHECK(clg_tensorboard_open(NULL, &tb, NULL, 0) == CLG_ERR_INVALID_ARGUMENT);
    /* a write that fails: the file may grow no more than it has (RLIMIT_FSIZE; SIGXFSZ
     * ignored, so write(2) returns EFBIG instead of the signal ending the test) */
    CHECK(clg_tensorboard_open(dir, &tb, err, sizeof err) == CLG_OK);
    if (!tb) return;
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 60;   /* the version record (40 bytes) is there; one scalar more passes the limit */
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    clg_status st = CLG_OK;
    for (int i = 0; i < 4 && st == CLG_OK; i++) st = clg_tensorboard_scalar(tb, "train/loss", i, 1.0);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, was);
    CHECK(st == CLG_ERR_IO);
    CHECK_MSG(strstr(clg_tensorboard_error(tb), clg_tensorboard_path(tb)) && strstr(clg_tensorboard_error(tb), "write failed"),
              "%s", clg_tensorboard_error(tb));
    CHECK(clg_tensorboard_scalar(tb, "train/loss", 9, 1.0) == CLG_ERR_IO);   /* refused: the file may end torn */
    CHECK(strstr(clg_tensorboard_error(tb), "an earlier write failed") != NULL);
    CHECK(clg_tensorboard_close(tb) == CLG_OK);
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        closedir(d);
    }
    remove(path);
}

int main(void)
{
    char dir[] = "/tmp/clgrad-tb.XXXXXX";
    if (!mkdtemp(dir)) return fprintf(stderr, "FAIL: mkdtemp\n"), 1;
    crc_vectors();
    one_record();
    write_and_read(dir);
    failures(dir);
    remove_tree(dir);
    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures != 0;
}
