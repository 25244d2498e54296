/* io_impl.h: the internals of src/io/, shared by its files and the tests. Not installed.
 *
 *   io_error.c            where messages go: a device or a caller's buffer
 *   atomic_file.c         temporary file, fsync, rename, fsync of the directory
 *   safetensors_read.c    the validating parser and the handle (device-free: st_format.h)
 *   safetensors_header.c  the header of a file to write (device-free: st_format.h)
 *   safetensors_write.c   header and data out, through atomic_file
 *   safetensors_tensor.c  stored tensors to device tensors (conversions)
 *   module_io.c           clg_module_save / clg_module_load and their reports
 *   checkpoint.c          training checkpoints: optimizer state, train state
 */
#ifndef CLGRAD_IO_IMPL_H
#define CLGRAD_IO_IMPL_H

#include <stdarg.h>
#include <stdio.h>

#include "clgrad/io.h"
#include "st_format.h"
#include "tensor_impl.h"

/* ---- errors --------------------------------------------------------------------------------- */

/* Where a failure is reported: on dev when there is one, else into buf. Messages read
 * "<name>: <problem>", name being the file. */
typedef struct clg__io_err {
    clg_device *dev;
    char *buf;
    size_t len;
    const char *name;
} clg__io_err;

clg_status clg__io_fail(const clg__io_err *e, clg_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- atomic files ------------------------------------------------------------------------------ */

/* A file being written: FILE on a temporary beside the target. */
typedef struct clg__atomic_file {
    FILE *f;
    char *tmp;          /* the temporary's path */
    const char *path;   /* the target */
    bool failed;        /* a write failed: commit will refuse */
    int saved_errno;
} clg__atomic_file;

clg_status clg__atomic_open(clg__atomic_file *af, const char *path, const clg__io_err *e);
/* fwrite, remembering a failure for commit to report. */
void clg__atomic_write(clg__atomic_file *af, const void *data, size_t len);
/* Flush, fsync, close, rename over the target, fsync the directory. On any failure the
 * temporary is removed and the target is left as it was. */
clg_status clg__atomic_commit(clg__atomic_file *af, const clg__io_err *e);
/* Give up: close and remove the temporary. */
void clg__atomic_abort(clg__atomic_file *af);

/* ---- writing and reading (the device-free parts are in st_format.h) -------------------------------- */

clg__st_item clg__st_item_tensor(const char *name, const clg_tensor *t);

/* Write the items and metadata to path atomically. The header is built and checked
 * (unique names and keys) before the file is created. */
clg_status clg__st_write(const char *path, int n, const clg__st_item *items, int nmeta, const clg_safetensors_pair *meta,
                         const clg__io_err *e);

/* Whether a stored tensor fits `to` with `ndim`/`shape`: the shape equal and the
 * dtype convertible. */
bool clg__st_matches(const clg_safetensors_entry *t, clg_dtype to, int ndim, const int64_t *shape);
/* "[3, 4] F32" into buf. */
const char *clg__st_desc(const clg_safetensors_entry *t, char *buf, size_t len);
/* Check that every value of t fits dtype `to` (integers into int32); false with a
 * message via e naming the tensor. */
bool clg__st_values_fit(const clg_safetensors_entry *t, clg_dtype to, const clg__io_err *e);
/* Copy t's values into dst (an existing tensor of the same shape), converting;
 * no-grad, in a scope of its own. */
clg_status clg__st_copy_into(const clg_safetensors_entry *t, clg_tensor *dst, const clg__io_err *e);

/* ---- module matching (module_io.c), shared with checkpoints ----------------------------------------- */

/* Match st's tensors against m's state (names beginning "optim." in the file are
 * ignored); fill report (zeroed or filled before: its lists are freed first); in strict
 * mode fail, changing nothing, when anything does not match. Then, when `apply`, copy
 * what matches. */
clg_status clg__module_match(clg_module *m, const clg_safetensors *st, bool strict, bool apply,
                             clg_load_report *report, const clg__io_err *e);

/* The reserved prefix of optimizer state in checkpoints. */
#define CLG_OPTIM_PREFIX "optim."
#define CLG_OPTIM_STATE_PREFIX "optim.state."

#endif
