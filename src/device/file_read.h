/* file_read.h: the one way clgrad reads a file whole (kernel sources, the program cache,
 * parameter files, data files, tuning records). Needs nothing of OpenCL.
 *
 *   unsigned char *buf;  size_t len;  char why[256];
 *   if (clg__file_read("params.txt", 1 << 20, &buf, &len, why, sizeof why) != CLG_OK)
 *       ... why: "is a directory", "not a regular file (a FIFO?)", "over the 1048576-byte limit" ...
 *   ... buf[len] is 0 ...
 *   free(buf);
 *
 * The open never blocks (a FIFO opens with O_NONBLOCK, then is refused), only regular
 * files are read, and only up to the size they had when opened and at most `max`
 * bytes: /dev/zero, /dev/urandom or a FIFO end in an error, never in a hang or an
 * endless read. */
#ifndef CLGRAD_DEVICE_FILE_READ_H
#define CLGRAD_DEVICE_FILE_READ_H

#include <stddef.h>

#include "clgrad/status.h"

/* *data (malloc'd, NUL-terminated) and *len, or CLG_ERR_IO / CLG_ERR_OUT_OF_MEMORY with
 * the reason (without the path) in why. A missing file: CLG_ERR_IO and errno's text. */
clg_status clg__file_read(const char *path, size_t max, unsigned char **data, size_t *len, char *why, size_t whylen);

#endif
