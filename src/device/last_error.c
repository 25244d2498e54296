/* last_error.c: see last_error.h. */
#include <stdio.h>

#include "last_error.h"

static _Thread_local struct {
    clg_status status;
    char msg[1024];
} last;

clg_status clg_last_status(void) { return last.status; }
const char *clg_last_error(void) { return last.msg; }

clg_status clg__last_error_vset(clg_status status, const char *fmt, va_list ap)
{
    vsnprintf(last.msg, sizeof last.msg, fmt, ap);
    last.status = status;
    return status;
}

clg_status clg__last_error_set(clg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    clg__last_error_vset(status, fmt, ap);
    va_end(ap);
    return status;
}

clg_status clg__report(char *err, size_t errlen, clg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    clg__last_error_vset(status, fmt, ap);
    va_end(ap);
    if (err && errlen) snprintf(err, errlen, "%s", last.msg);
    return status;
}
