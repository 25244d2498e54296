/* device.c: open and close a device (context + in-order queue), record errors, log,
 * and keep the transfer counters. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device_cl.h"
#include "layer.h"
#include "last_error.h"

clg_status clg__device_enumerate(clg_device_info *infos, cl_platform_id *plats, cl_device_id *ids,
                                 int cap, int *count, char *err, size_t errlen);

#define MAX_DEVICES 256

double clg__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

clg_status clg__fail(clg_device *dev, clg_status status, const char *fmt, ...)
{
    va_list ap;
    if (!dev) {   /* the thread's last error (last_error.c) */
        va_start(ap, fmt);
        clg__last_error_vset(status, fmt, ap);
        va_end(ap);
        return status;
    }
    va_start(ap, fmt);
    vsnprintf(dev->error, sizeof dev->error, fmt, ap);
    va_end(ap);
    dev->status = status;
    return status;
}

clg_status clg__cl_fail(clg_device *dev, int err, const char *call, const char *what)
{
    clg_status st = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
                     err == CL_INVALID_BUFFER_SIZE)
                        ? CLG_ERR_OUT_OF_MEMORY
                        : CLG_ERR_OPENCL;
    return clg__fail(dev, st, "%s(%s): %s (%d)", call, what ? what : "", clg_cl_error_name(err), err);
}

clg_saved_error clg__error_save(const clg_device *dev) { return (clg_saved_error){dev->status, strdup(dev->error)}; }

void clg__error_restore(clg_device *dev, const clg_saved_error *e)
{
    dev->status = e->status;
    snprintf(dev->error, sizeof dev->error, "%s", e->text ? e->text : "");
}

void clg__error_drop(clg_saved_error *e)
{
    free(e->text);
    e->text = NULL;
}

static void log_stderr(void *user, int level, const char *msg)
{
    (void)user;
    fprintf(stderr, "clgrad: %s%s\n", level == 0 ? "error: " : level == 1 ? "warning: " : "", msg);
}

void clg__log(clg_device *dev, int level, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (dev && dev->log) dev->log(dev->log_user, level, msg);
}

void clg_device_set_log(clg_device *dev, clg_log_fn fn, void *user)
{
    if (!dev) return;
    dev->log = fn;
    dev->log_user = user;
}

static clg_status create_context(clg_device *dev)
{
    cl_int e;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->cl->platform, 0};
    dev->cl->ctx = clCreateContext(props, 1, &dev->cl->id, NULL, NULL, &e);
    if (e != CL_SUCCESS) return clg__cl_fail(dev, e, "clCreateContext", dev->info.name);
    cl_command_queue_properties qp = dev->prof.enabled ? CL_QUEUE_PROFILING_ENABLE : 0;
    dev->cl->queue = clCreateCommandQueue(dev->cl->ctx, dev->cl->id, qp, &e);
    if (e != CL_SUCCESS) return clg__cl_fail(dev, e, "clCreateCommandQueue", dev->info.name);
    return dev->prof.enabled ? clg__profile_calibrate(dev) : CLG_OK;
}

clg_status clg_device_open(const char *spec, clg_device **out)
{
    if (!out) return CLG_ERR_INVALID_ARGUMENT;
    clg_device *dev = calloc(1, sizeof *dev);
    *out = dev;
    if (!dev) return CLG_ERR_OUT_OF_MEMORY;
    dev->cl = calloc(1, sizeof *dev->cl);
    if (!dev->cl) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_device_open: out of host memory");
    dev->log = log_stderr;
    const char *env = getenv("CLG_PROFILE");
    dev->prof.enabled = env && *env && strcmp(env, "0") != 0;
    dev->prof.host_t0 = clg__now();
    clg__rt_init(dev);
    clg__rng_init(dev);   /* the runtime's layers: the base, profiling on it when on */
    const char *kd = getenv("CLG_KERNEL_DIR");
#ifdef CLGRAD_KERNEL_DIR_DEFAULT
    if (!kd || !*kd) kd = CLGRAD_KERNEL_DIR_DEFAULT;
#endif
    snprintf(dev->kernel_dir, sizeof dev->kernel_dir, "%s", kd ? kd : "");

    if (!spec || !*spec) spec = getenv("CLG_DEVICE");
    clg_device_info *infos = calloc(MAX_DEVICES, sizeof *infos);
    cl_platform_id *plats = calloc(MAX_DEVICES, sizeof *plats);
    cl_device_id *ids = calloc(MAX_DEVICES, sizeof *ids);
    clg_status st = CLG_ERR_OUT_OF_MEMORY;
    int n = 0, idx = -1;
    if (!infos || !plats || !ids) {
        clg__fail(dev, st, "clg_device_open: out of host memory");
        goto done;
    }
    st = clg__device_enumerate(infos, plats, ids, MAX_DEVICES, &n, dev->error, sizeof dev->error);
    if (st == CLG_OK)
        st = clg_device_find(spec, infos, n < MAX_DEVICES ? n : MAX_DEVICES, &idx, dev->error,
                             sizeof dev->error);
    if (st != CLG_OK) {
        dev->status = st;
        goto done;
    }
    dev->info = infos[idx];
    dev->cl->platform = plats[idx];
    dev->cl->id = ids[idx];
    st = clg__params_init(dev);
    if (st == CLG_OK) st = create_context(dev);
done:
    free(infos);
    free(plats);
    free(ids);
    return st;
}

cl_int clg__queue_finish(cl_command_queue q)
{
    cl_event ev = NULL;
    cl_int e = clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
    if (e == CL_SUCCESS) e = clWaitForEvents(1, &ev);
    if (ev) clReleaseEvent(ev);
    cl_int f = clFinish(q);
    return e != CL_SUCCESS ? e : f;
}

void clg__platform_version(clg_device *dev, char *buf, size_t len)
{
    if (!len) return;
    if (clGetPlatformInfo(dev->cl->platform, CL_PLATFORM_VERSION, len, buf, NULL) != CL_SUCCESS) buf[0] = 0;
    buf[len - 1] = 0;
}

bool clg__device_is_open(const clg_device *dev) { return dev && dev->cl && dev->cl->queue; }

void clg_device_close(clg_device *dev)
{
    if (!dev) return;
    if (!dev->cl) {   /* its open failed before it had any handle */
        free(dev);
        return;
    }
    if (dev->cl->queue) clg__queue_finish(dev->cl->queue);
    for (int i = 0; i < CLG_SLOT_COUNT; i++)
        if (dev->slots[i].free) dev->slots[i].free(dev, dev->slots[i].data);
    clg__profile_free(dev);
    clg__kernel_errors_free(dev);
    clg__programs_free(dev);
    clg__pool_free_all(dev);
    if (dev->cl->queue) clReleaseCommandQueue(dev->cl->queue);
    if (dev->cl->ctx) clReleaseContext(dev->cl->ctx);
    free(dev->cl);
    free(dev);
}

const clg_device_info *clg_device_get_info(const clg_device *dev) { return dev ? &dev->info : NULL; }
const char *clg_device_error(const clg_device *dev)
{
    return dev ? dev->error : "no device (host memory exhausted)";
}
clg_status clg_device_last_status(const clg_device *dev) { return dev ? dev->status : CLG_ERR_OUT_OF_MEMORY; }

void clg_device_clear_error(clg_device *dev)
{
    if (!dev) return;
    dev->error[0] = 0;
    dev->status = CLG_OK;
}

clg_status clg_device_finish(clg_device *dev)
{
    if (!dev || !dev->cl->queue) return CLG_ERR_INVALID_ARGUMENT;
    CLG_CL_TRY(dev, clg__queue_finish(dev->cl->queue), "clFinish", dev->info.name);
    clg__profile_collect(dev);
    return CLG_OK;
}

clg_transfer_stats clg_device_transfers(const clg_device *dev)
{
    clg_transfer_stats z = {0};
    return dev ? dev->transfers : z;
}

void clg_device_transfers_reset(clg_device *dev)
{
    if (dev) memset(&dev->transfers, 0, sizeof dev->transfers);
}

clg_program_stats clg_device_program_stats(const clg_device *dev)
{
    clg_program_stats z = {0};
    if (!dev) return z;
    clg_program_stats s = dev->prog_stats;
    s.cache_enabled = dev->disk.enabled;
    return s;
}

const char *clg_device_cache_dir(clg_device *dev)
{
    if (dev && dev->cl->ctx) clg__disk_cache_init(dev);
    return dev && dev->disk.enabled ? dev->disk.dir : NULL;
}
