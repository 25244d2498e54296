/* clgrad/status.h: status codes returned by every fallible clgrad call.
 *
 *   clg_device *dev;
 *   clg_status st = clg_device_open("cpu", &dev);   // POCL's device, say
 *   if (st != CLG_OK)
 *       fprintf(stderr, "%s: %s\n", clg_status_str(st), clg_device_error(dev));
 *   clg_device_close(dev);                           // NULL (none opened) is fine
 *
 * The code says what kind of failure it was; the message recorded on the device
 * (clg_device_error) says which call, which OpenCL error by name, which shapes.
 */
#ifndef CLGRAD_STATUS_H
#define CLGRAD_STATUS_H

#include "clgrad/version.h"   /* written by the build: CLG_VERSION */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CLGRAD_BUILDING) && defined(__GNUC__)
#define CLG_API __attribute__((visibility("default")))
#else
#define CLG_API
#endif

typedef enum clg_status {
    CLG_OK = 0,
    CLG_ERR_INVALID_ARGUMENT, /* NULL or out-of-range argument from the caller */
    CLG_ERR_NO_DEVICE,        /* no OpenCL platform or device, or a spec that matches none */
    CLG_ERR_OPENCL,           /* an OpenCL call failed; the message names it and the error */
    CLG_ERR_BUILD,            /* a kernel program failed to build; the message holds the log */
    CLG_ERR_OUT_OF_MEMORY,    /* host or device allocation failed, or exceeds a device limit */
    CLG_ERR_SHAPE,            /* shapes that do not fit the operation */
    CLG_ERR_DTYPE,            /* a dtype the operation or the device does not support */
    CLG_ERR_UNSUPPORTED,      /* a feature the device lacks */
    CLG_ERR_IO,               /* a file could not be read or written */
    CLG_ERR_FORMAT,           /* a file's contents are malformed */
    CLG_ERR_CLBLAST,          /* a CLBlast routine failed */
    CLG_ERR_COMM,             /* communication between ranks failed or timed out (dist.h) */
    CLG_STATUS_COUNT
} clg_status;

/* "CLG_OK", "CLG_ERR_OPENCL", ...; never NULL. */
CLG_API const char *clg_status_str(clg_status status);

/* The version of these headers (CLG_VERSION, "0.1.0", and CLG_VERSION_MAJOR, _MINOR,
 * _PATCH from version.h, which the build writes), and clg_version(), of the library the
 * program runs with: the two differ when a program runs with another build than the one
 * it was compiled against. */
CLG_API const char *clg_version(void);

/* Failures of calls that have no device to record them on (clg_concat of an empty
 * list, for one): the calling thread's last such status and message, CLG_OK and ""
 * when there was none. Every other failure is recorded on its device
 * (clg_device_last_status, clg_device_error). */
CLG_API clg_status clg_last_status(void);
CLG_API const char *clg_last_error(void);

/* The name of an OpenCL error code: -5 -> "CL_OUT_OF_RESOURCES"; unknown codes
 * give "CL_UNKNOWN_ERROR". Never NULL. */
CLG_API const char *clg_cl_error_name(int cl_error);

#ifdef __cplusplus
}
#endif
#endif
