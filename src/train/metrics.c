/* metrics.c: one CSV row per report, with a header when the file starts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clgrad/train.h"

static void num(FILE *f, double v, const char *sep)
{
    if (isnan(v)) fprintf(f, "%s", sep);
    else fprintf(f, "%.6g%s", v, sep);
}

/* Drop the rows of epochs >= epoch: a run killed after writing an epoch's row but
 * before its checkpoint landed redoes that epoch on resume, and its row would appear
 * twice. The file is rewritten beside itself and renamed over (only when a row goes). */
static clg_status drop_from(const char *path, int epoch, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return CLG_OK;   /* no file yet */
    if (!S_ISREG(sb.st_mode))   /* a FIFO would block the open, a folder fail later */
    {
        if (err && errlen) snprintf(err, errlen, "%s: not a regular file", path);
        return CLG_ERR_IO;
    }
    FILE *f = fopen(path, "r");
    if (!f) return CLG_OK;
    char line[1024];
    size_t cap = 1 << 12, used = 0;
    char *keep = malloc(cap);
    bool dropped = false, ok = keep != NULL;
    for (bool first = true; ok && fgets(line, sizeof line, f); first = false) {
        char *end;
        long e = strtol(line, &end, 10);
        if (!first && end != line && *end == ',' && e >= epoch) {
            dropped = true;
            continue;
        }
        size_t n = strlen(line);
        if (used + n + 1 > cap) {
            char *nk = realloc(keep, 2 * (used + n + 1));
            if (!nk) ok = false;
            else keep = nk, cap = 2 * (used + n + 1);
        }
        if (ok) memcpy(keep + used, line, n), used += n;
    }
    fclose(f);
    clg_status st = CLG_OK;
    if (ok && dropped) {
        size_t tl = strlen(path) + 8;
        char *tmp = malloc(tl);
        FILE *t = tmp ? (snprintf(tmp, tl, "%s.trim", path), fopen(tmp, "w")) : NULL;
        bool wrote = t && fwrite(keep, 1, used, t) == used;
        if (t && fclose(t) != 0) wrote = false;
        if (!wrote || rename(tmp, path) != 0) {
            if (tmp) remove(tmp);
            if (err && errlen) snprintf(err, errlen, "%s: cannot rewrite it without the rows of epoch %d on", path, epoch);
            st = CLG_ERR_IO;
        }
        free(tmp);
    } else if (!ok) {
        if (err && errlen) snprintf(err, errlen, "%s: out of memory reading it", path);
        st = CLG_ERR_OUT_OF_MEMORY;
    }
    free(keep);
    return st;
}

clg_status clg_metrics_append(const char *path, const clg_metrics_row *r, char *err, size_t errlen)
{
    if (!path || !r) return CLG_ERR_INVALID_ARGUMENT;
    clg_status dst = drop_from(path, r->epoch, err, errlen);
    if (dst) return dst;
    struct stat st;
    bool fresh = stat(path, &st) != 0 || st.st_size == 0;
    FILE *f = fopen(path, "a");
    if (!f) {
        if (err && errlen) snprintf(err, errlen, "%s: cannot open for appending", path);
        return CLG_ERR_IO;
    }
    if (fresh) fprintf(f, "epoch,step,train_loss,train_acc,test_loss,test_acc,images_per_sec,lr\n");
    fprintf(f, "%d,%lld,", r->epoch, (long long)r->step);
    num(f, r->train_loss, ",");
    num(f, r->train_acc, ",");
    num(f, r->test_loss, ",");
    num(f, r->test_acc, ",");
    num(f, r->images_per_sec, ",");
    num(f, r->lr, "\n");
    bool ok = !ferror(f);
    if (fclose(f) != 0 || !ok) {
        if (err && errlen) snprintf(err, errlen, "%s: write failed", path);
        return CLG_ERR_IO;
    }
    return CLG_OK;
}
