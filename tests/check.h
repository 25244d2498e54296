/* check.h: the few macros the tests share. A failed CHECK prints where and why and
 * makes the test exit non-zero at the end; nothing here skips. */
#ifndef CLGRAD_TESTS_CHECK_H
#define CLGRAD_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <clgrad.h>

/* One pair of counters per test program, shared by its files (tests/helpers too). */
__attribute__((weak)) int check_failures;
__attribute__((weak)) int check_count;

#define CHECK(cond)                                                               \
    do {                                                                          \
        check_count++;                                                            \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                     \
        }                                                                         \
    } while (0)

#define CHECK_MSG(cond, ...)                                                      \
    do {                                                                          \
        check_count++;                                                            \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            check_failures++;                                                     \
        }                                                                         \
    } while (0)

#define CHECK_OK(dev, expr)                                                       \
    do {                                                                          \
        clg_status check_st_ = (expr);                                            \
        CHECK_MSG(check_st_ == CLG_OK, "%s: %s", clg_status_str(check_st_), clg_device_error(dev)); \
    } while (0)

/* Open the device the tests run on ($CLG_DEVICE or the default). No device is a
 * failure, never a skip: a green run where no kernel ran would prove nothing. */
static inline clg_device *check_open_device(void)
{
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) {
        fprintf(stderr, "FAIL: no usable OpenCL device: %s\n", clg_device_error(dev));
        clg_device_close(dev);
        exit(1);
    }
    return dev;
}

static inline int check_report(const char *name)
{
    if (check_failures) {
        fprintf(stderr, "%s: %d of %d checks failed\n", name, check_failures, check_count);
        return 1;
    }
    printf("%s: %d checks passed\n", name, check_count);
    return 0;
}

#endif
