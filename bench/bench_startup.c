/* bench_startup: how long a process takes from start to its first kernel result,
 * with cold caches (empty clgrad and POCL cache directories, as a new user or a fresh
 * CI machine sees) and warm ones. Each run is a fresh process (this program run
 * again with --child); min/median/max over the runs.
 *
 *   ./build/bench/bench_startup [RUNS]      (default 5)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clgrad.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int child(void)
{
    clg_device *dev;
    clg_status st = clg_device_open(NULL, &dev);
    if (st == CLG_OK) st = clg_device_selftest(dev, 1024);
    if (st != CLG_OK) fprintf(stderr, "bench_startup: %s\n", clg_device_error(dev));
    clg_device_close(dev);
    return st == CLG_OK ? 0 : 1;
}

/* One timed process with the given cache directories; -1 on failure. */
static double run_once(const char *clg_cache, const char *pocl_cache)
{
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        setenv("CLG_CACHE_DIR", clg_cache, 1);
        setenv("POCL_CACHE_DIR", pocl_cache, 1);
        execl("/proc/self/exe", "bench_startup", "--child", (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    double dt = now() - t0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? dt : -1;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void row(const char *name, double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    printf("  %-38s %9.1f %9.1f %9.1f\n", name, t[0] * 1e3, med * 1e3, t[n - 1] * 1e3);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--child")) return child();
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 1 || runs > 1000) runs = 5;
    char base[] = "/tmp/clgrad-bench-XXXXXX";
    if (!mkdtemp(base)) return perror("mkdtemp"), 1;
    double *cold = calloc((size_t)runs, sizeof *cold), *warm = calloc((size_t)runs, sizeof *warm);
    double *ours = calloc((size_t)runs, sizeof *ours);
    char a[256], b[256], cmd[300];
    for (int i = 0; i < runs; i++) {
        snprintf(a, sizeof a, "%s/cold%d-clg", base, i);
        snprintf(b, sizeof b, "%s/cold%d-pocl", base, i);
        if ((cold[i] = run_once(a, b)) < 0) return fprintf(stderr, "cold run failed\n"), 1;
    }
    snprintf(a, sizeof a, "%s/warm-clg", base);
    snprintf(b, sizeof b, "%s/warm-pocl", base);
    if (run_once(a, b) < 0) return 1; /* fills the warm caches */
    for (int i = 0; i < runs; i++)
        if ((warm[i] = run_once(a, b)) < 0) return fprintf(stderr, "warm run failed\n"), 1;
    /* Only clgrad's cache warm: what the binary cache saves on its own. */
    for (int i = 0; i < runs; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/ours%d-pocl", base, i);
        if ((ours[i] = run_once(a, p)) < 0) return fprintf(stderr, "run failed\n"), 1;
    }

    clg_device *dev;
    if (clg_device_open(NULL, &dev) == CLG_OK) {
        const clg_device_info *in = clg_device_get_info(dev);
        printf("start-up to the first kernel result (process start, device open, build or cache\n"
               "load of one program, 4 KiB up, one launch, 4 KiB back), %d runs each\n", runs);
        printf("device: %s | %s | driver %s\n\n", in->name, in->platform, in->driver);
    }
    clg_device_close(dev);
    printf("  %-38s %9s %9s %9s\n", "", "min ms", "median ms", "max ms");
    row("cold (empty clgrad and POCL caches)", cold, runs);
    row("warm (caches filled by an earlier run)", warm, runs);
    row("clgrad cache warm, POCL cache empty", ours, runs);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    free(cold);
    free(warm);
    free(ours);
    return 0;
}
