/* last_error.h: where failures without a device are recorded (clg_last_status,
 * clg_last_error): one status and message per thread, as errno. Needs nothing of
 * OpenCL, so that the file parsers (and their fuzz targets) can record there too. */
#ifndef CLGRAD_LAST_ERROR_H
#define CLGRAD_LAST_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#include "clgrad/status.h"

clg_status clg__last_error_vset(clg_status status, const char *fmt, va_list ap);
clg_status clg__last_error_set(clg_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The failure of a call without a device: the message into the caller's err buffer
 * (errlen bytes; none when err is NULL) and the thread's last error; returns status. */
clg_status clg__report(char *err, size_t errlen, clg_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
