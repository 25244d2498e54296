/* errflag.c: errors found by kernels in values the host never sees (device_impl.h,
 * clg_kernel_errors). An index or a label made on the device (argmax, a loader's
 * upload) can be out of range; the kernel writes NaN there, as before, and also sets
 * the device's error word, so that the next read to the host fails instead of handing
 * back a quietly wrong loss. */
#include <stdio.h>
#include <string.h>

#include "backend.h"

/* Zero the word, uncounted (it is not a transfer the program asked for); the source
 * is static, so the write need not wait. */
static clg_status clear_word(clg_device *dev, clg_buffer *w)
{
    static const int32_t zero[4] = {0, 0, 0, 0};
    return clg__mem_write(dev, w, 0, zero, sizeof zero, false, NULL, "kernel error word");
}

clg_buffer *clg__kernel_error_word(clg_device *dev, const char *op, const char *value, int *code)
{
    clg_kernel_errors *e = &dev->kerr;
    int k = 0;
    while (k < e->nops && (strcmp(e->ops[k], op) || strcmp(e->what[k], value))) k++;
    if (k == e->nops) {
        if (k == CLG_KERNEL_ERROR_OPS) {
            clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: more than %d ops report kernel errors", op, k);
            return NULL;
        }
        e->ops[k] = op;
        e->what[k] = value;
        e->nops++;
    }
    if (!e->word) {
        clg_buffer *w = clg__buffer_alloc(dev, sizeof e->host);
        if (!w || clear_word(dev, w) != CLG_OK) {
            clg__buffer_release(w);
            return NULL;
        }
        e->word = w;
    }
    *code = k + 1;
    return e->word;
}

clg_status clg__kernel_error_check(clg_device *dev)
{
    clg_kernel_errors *e = &dev->kerr;
    if (!e->word || e->host[0] == 0) return CLG_OK;
    int k = e->host[0] - 1;
    const char *op = k >= 0 && k < e->nops ? e->ops[k] : "an op";
    const char *what = k >= 0 && k < e->nops ? e->what[k] : "index";
    int32_t value = e->host[1], bound = e->host[2];
    memset(e->host, 0, sizeof e->host);
    clg_status st = clear_word(dev, e->word);   /* report it once */
    if (st) return st;
    /* A `what` with a % is the whole message, formatted with the value and the bound
     * (clg_multinomial's "weights row %d sums to 0"). */
    if (strchr(what, '%')) {
        char msg[256];
        snprintf(msg, sizeof msg, what, (int)value, (int)bound);
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_%s: %s (found on the device by an earlier %s)", op, msg,
                         op);
    }
    return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                     "clg_%s: %s %d out of range [0, %d) (found on the device by an earlier %s; its results, and "
                     "what was computed from them, hold NaN or no gradient there)", op, what, (int)value, (int)bound, op);
}

void clg__kernel_errors_free(clg_device *dev)
{
    clg__buffer_release(dev->kerr.word);
    dev->kerr.word = NULL;
}
