/* build_many.c: several programs built ahead, their compiles side by side on a few host
 * threads (clg__programs_build, device_impl.h). OpenCL lets threads build different
 * programs at once; whether the driver compiles them in parallel is its own affair
 * (POCL 3.1 holds one lock over its compiler: two threads built two programs in 1.37 s
 * against 1.30 s one after the other, so its table says build_threads = 1). Only the
 * compiles run on the threads; sources, the disk cache, the counts, the profile and the
 * program table stay on the caller's (device_cl.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "device_cl.h"

typedef struct build_batch {
    const clg_device *dev;
    clg_build_job *jobs;
    int n;
    atomic_int next;   /* the next job to take */
} build_batch;

/* Take jobs until none is left: on each pool thread and on the caller's. */
static void *take_jobs(void *arg)
{
    build_batch *b = arg;
    for (int i; (i = atomic_fetch_add(&b->next, 1)) < b->n;)
        if (!b->jobs[i].cached) clg__build_compile(b->dev, &b->jobs[i]);
    return NULL;
}

/* Compile the batch on up to `threads` threads, the caller's one of them; threads that
 * cannot be started leave their share to the others. */
static void compile_all(build_batch *b, int threads)
{
    pthread_t th[CLG_BUILD_THREADS_MAX];
    int started = 0;
    for (int i = 1; i < threads && i < b->n && started < CLG_BUILD_THREADS_MAX; i++)
        if (pthread_create(&th[started], NULL, take_jobs, b) == 0) started++;
    take_jobs(b);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}

/* Whether reqs[i] names a program an earlier request or the table has. */
static bool already(clg_device *dev, const clg_build_job *jobs, int n, const clg_build_job *j)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(jobs[i].name, j->name) && !strcmp(jobs[i].options, j->options)) return true;
    return clg__program_find(dev, j->name, j->options) != NULL;
}

/* Begin the jobs of reqs not built yet: 0 when out of host memory. Their errors are left
 * for the kernels' own requests to report. */
static int begin_all(clg_device *dev, int n, const clg_program_req *reqs, clg_build_job *jobs)
{
    int got = 0;
    for (int i = 0; i < n; i++) {
        clg_build_job *j = &jobs[got];
        memset(j, 0, sizeof *j);
        snprintf(j->name, sizeof j->name, "%s", reqs[i].program);
        if (!(j->options = clg__program_options(dev, reqs[i].options ? reqs[i].options : ""))) break;
        if (!already(dev, jobs, got, j) && clg__build_begin(dev, j)) got++;
        else free(j->options);
    }
    return got;
}

int clg__programs_bundle(clg_device *dev, int n, const char *const *names, const char *options)
{
    if (!clg__device_is_open(dev) || n <= 0 || !names) return 0;
    clg_build_job job = {.options = clg__program_options(dev, options ? options : "")};
    if (!job.options) return 0;
    int members = 0;
    size_t len = 0;
    for (int i = 0; i < n; i++) {   /* "a+b+c" of those not built yet, if the name holds them */
        size_t l = strlen(names[i]);
        if (clg__program_find(dev, names[i], job.options) || len + l + 1 >= sizeof job.name) continue;
        snprintf(job.name + len, sizeof job.name - len, "%s%s", members ? "+" : "", names[i]);
        len += l + (members++ > 0);
    }
    clg_saved_error saved = clg__error_save(dev);   /* a build's failure here is not the caller's */
    int built = 0;
    cl_program p = NULL;
    if (members && clg__build_begin(dev, &job)) {
        if (!job.cached) clg__build_compile(dev, &job);
        p = clg__build_end(dev, &job, false);
    }
    /* each member keeps a reference: the build's the first, a retained one the others
     * (clg__program_keep releases the one it is given when it fails) */
    for (const char *m = job.name; p && *m;) {
        size_t ml = strcspn(m, "+");
        char member[sizeof job.name];
        snprintf(member, sizeof member, "%.*s", (int)ml, m);
        if (built && clRetainProgram(p) != CL_SUCCESS) break;
        if (!clg__program_keep(dev, member, job.options, p)) break;
        built++;
        m += ml + (m[ml] == '+');
    }
    clg__error_restore(dev, &saved);
    clg__error_drop(&saved);
    free(job.options);
    return built;
}

int clg__programs_build(clg_device *dev, int n, const clg_program_req *reqs)
{
    if (!clg__device_is_open(dev) || n <= 0 || !reqs) return 0;
    clg_build_job *jobs = calloc((size_t)n, sizeof *jobs);
    if (!jobs) return 0;
    clg_saved_error saved = clg__error_save(dev);   /* a build's failure here is not the caller's */
    double t0 = clg__now();
    build_batch b = {.dev = dev, .jobs = jobs, .n = begin_all(dev, n, reqs, jobs)};
    atomic_init(&b.next, 0);
    compile_all(&b, (int)dev->params.build_threads);
    int built = 0, compiled = 0;
    for (int i = 0; i < b.n; i++) {
        compiled += !jobs[i].cached;
        cl_program p = clg__build_end(dev, &jobs[i], false);
        if (p && clg__program_keep(dev, jobs[i].name, jobs[i].options, p)) built++;
        free(jobs[i].options);
    }
    if (compiled)   /* said when the compiler ran (a cold start), not at every start */
        clg__log(dev, 2, "built %d of %d programs ahead in %.2f s (%d compiled, %zu threads at most)", built, n,
                 clg__now() - t0, compiled, dev->params.build_threads);
    clg__error_restore(dev, &saved);
    clg__error_drop(&saved);
    free(jobs);
    return built;
}
