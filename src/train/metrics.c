/* metrics.c: one CSV row per report, with a header when the file starts. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "clgrad/train.h"

static void num(FILE *f, double v, const char *sep)
{
    if (isnan(v)) fprintf(f, "%s", sep);
    else fprintf(f, "%.6g%s", v, sep);
}

clg_status clg_metrics_append(const char *path, const clg_metrics_row *r, char *err, size_t errlen)
{
    if (!path || !r) return CLG_ERR_INVALID_ARGUMENT;
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
