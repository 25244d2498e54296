/* The on-disk program cache, checked by its mechanism rather than by time:
 *   1. a cold process compiles from source and writes an entry;
 *   2. a second process loads that entry and compiles nothing;
 *   3. a corrupt entry (or a FIFO in its place) is ignored, rebuilt and rewritten;
 *   4. a directory that cannot be created disables the cache with one warning, and
 *      kernels still build and run;
 *   5. programs are built lazily: opening a device compiles nothing;
 *   6. with the device parameter binary_cache=off (POCL's default: it caches compiled
 *      kernels itself) nothing is written, and entries already there are still loaded.
 * Each step runs in a fresh process (this binary re-executed) so no in-memory state
 * carries over. */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char cache_dir[512];

/* Log hook that counts warnings. */
static void count(void *u, int level, const char *msg)
{
    if (level == 1) (*(int *)u)++;
    fprintf(stderr, "[log %d] %s\n", level, msg);
}

/* Child: open, run the selftest, print the program stats; exit 0 if they match
 * `expect` ("built", "cached", "off"). */
static int child(const char *expect)
{
    int warnings = 0;
    clg_device *dev = check_open_device();
    clg_device_set_log(dev, count, &warnings);
    clg_program_stats before = clg_device_program_stats(dev);
    CHECK(before.built_from_source == 0 && before.loaded_from_cache == 0); /* lazy */
    CHECK_OK(dev, clg_device_selftest(dev, 1000));
    clg_program_stats s = clg_device_program_stats(dev);
    printf("child %s: built %llu, cached %llu, writes %llu, rejects %llu, enabled %d, warnings %d\n", expect,
           (unsigned long long)s.built_from_source, (unsigned long long)s.loaded_from_cache,
           (unsigned long long)s.cache_writes, (unsigned long long)s.cache_rejects, s.cache_enabled, warnings);
    if (!strcmp(expect, "built")) {
        CHECK(s.built_from_source == 1 && s.loaded_from_cache == 0 && s.cache_writes == 1 && s.cache_enabled);
    } else if (!strcmp(expect, "cached")) {
        CHECK(s.built_from_source == 0 && s.loaded_from_cache == 1 && s.cache_writes == 0);
    } else if (!strcmp(expect, "rebuilt")) {
        CHECK(s.built_from_source == 1 && s.cache_rejects == 1 && s.cache_writes == 1);
    } else if (!strcmp(expect, "nostore")) {
        CHECK(s.built_from_source == 1 && s.cache_writes == 0 && s.cache_enabled);
    } else if (!strcmp(expect, "off")) {
        CHECK(!s.cache_enabled && s.built_from_source == 1 && warnings == 1);
        CHECK(clg_device_cache_dir(dev) == NULL);
    }
    clg_device_close(dev);
    return check_failures ? 1 : 0;
}

/* binary_cache: the device parameter for the child ("on" or "off"). */
static int run_child_with(const char *expect, const char *dir, const char *binary_cache)
{
    pid_t pid = fork();
    if (pid == 0) {
        char params[64];
        snprintf(params, sizeof params, "binary_cache=%s", binary_cache);
        setenv("CLG_PARAMS", params, 1);
        setenv("CLG_CACHE_DIR", dir, 1);
        execl("/proc/self/exe", "test_program_cache", "--child", expect, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int run_child(const char *expect, const char *dir) { return run_child_with(expect, dir, "on"); }

/* The one cache entry in the directory, or "" */
static int entries(char *path, size_t n)
{
    DIR *d = opendir(cache_dir);
    int count = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        count++;
        snprintf(path, n, "%s/%s", cache_dir, e->d_name);
    }
    if (d) closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--child")) return child(argv[2]);

    snprintf(cache_dir, sizeof cache_dir, "%s/clgrad-cache-test-%ld", P_tmpdir, (long)getpid());
    char entry[1024];
    CHECK(run_child_with("nostore", cache_dir, "off") == 0);
    CHECK(entries(entry, sizeof entry) == 0);
    CHECK(run_child("built", cache_dir) == 0);
    CHECK(entries(entry, sizeof entry) == 1);
    CHECK(run_child("cached", cache_dir) == 0);
    CHECK(entries(entry, sizeof entry) == 1);
    CHECK(run_child_with("cached", cache_dir, "off") == 0);   /* stored by another: loaded */

    /* Corrupt the entry: flip bytes in its middle, then truncate another copy. */
    FILE *f = fopen(entry, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, size / 2, SEEK_SET);
        fputs("garbage", f);
        fclose(f);
    }
    CHECK(run_child("rebuilt", cache_dir) == 0);
    CHECK(run_child("cached", cache_dir) == 0);
    CHECK(truncate(entry, 40) == 0);
    CHECK(run_child("rebuilt", cache_dir) == 0);
    CHECK(run_child("cached", cache_dir) == 0);
    /* A FIFO in the entry's place: a miss, never a blocked open; the rebuilt entry
     * replaces it. */
    CHECK(unlink(entry) == 0 && mkfifo(entry, 0600) == 0);
    CHECK(run_child("rebuilt", cache_dir) == 0);
    CHECK(run_child("cached", cache_dir) == 0);

    /* An unusable directory (below a regular file) disables the cache, with one warning. */
    char bad[1100];
    snprintf(bad, sizeof bad, "%s/sub", entry);
    CHECK(run_child("off", bad) == 0);

    unlink(entry);
    rmdir(cache_dir);
    return check_report("test_program_cache");
}
