/* io_error.c: messages of src/io/, on the device when there is one, else in the
 * caller's buffer (if given) and the thread's last error: "<file>: <problem>". */
#include <stdio.h>

#include "io_impl.h"
#include "last_error.h"

clg_status clg__io_fail(const clg__io_err *e, clg_status status, const char *fmt, ...)
{
    char msg[CLG_ERROR_MAX];
    int n = snprintf(msg, sizeof msg, "%s: ", e->name ? e->name : "(memory)");
    if (n < 0 || (size_t)n >= sizeof msg) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (e->dev) return clg__fail(e->dev, status, "%s", msg);
    if (e->buf && e->len) snprintf(e->buf, e->len, "%s", msg);
    return clg__last_error_set(status, "%s", msg);   /* and the thread's last error */
}
