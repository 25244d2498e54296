/* cache.c: the tuner's choice on disk, in the program cache's directory, under a key
 * made of the device, its driver and platform, the engines' kernel sources and outside
 * libraries, and the candidate list, so that the next process reads it and does not
 * tune again; a missing, stale or corrupt file means tuning again. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file_read.h"
#include "gemm/tune.h"
#include "kernel_sources.h"

#define CACHE_MAGIC "clgrad gemm choice 2\n"

/* A kernel source's text as the program builder sees it (CLG_KERNEL_DIR or embedded). */
static char *source_text(clg_device *dev, const char *name)
{
    if (dev->kernel_dir[0]) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s.cl", dev->kernel_dir, name);
        unsigned char *buf = NULL;
        size_t len = 0;
        return clg__file_read(path, 16 << 20, &buf, &len, NULL, 0) == CLG_OK ? (char *)buf : NULL;
    }
    for (int i = 0; i < clg__kernel_source_count; i++)
        if (!strcmp(clg__kernel_sources[i].name, name)) return strdup(clg__kernel_sources[i].text);
    return NULL;
}

/* Everything the choice depends on, as text: compared whole when the file is read. Per
 * engine, the hashes of its kernel programs' sources and its outside library's version. */
void clg__gemm_cache_meta(clg_device *dev, int flags, const clg_gemm_candidate *cand, int ncand, char *meta,
                          size_t len)
{
    char pver[CLG_NAME_MAX] = "";
    clg__platform_version(dev, pver, sizeof pver);
    const clg_device_info *in = clg_device_get_info(dev);
    int w = snprintf(meta, len, CACHE_MAGIC "platform: %s | %s\ndevice: %s\nvendor: %s\ndriver: %s\n", in->platform,
                     pver, in->name, in->vendor, in->driver);
    for (int i = 0; i < clg__gemm_engine_count() && w > 0 && (size_t)w < len; i++) {
        const clg_gemm_engine *e = clg__gemm_engine_at(i);
        char v[128] = "";
        if (e->version) e->version(v, sizeof v);
        w += snprintf(meta + w, len - (size_t)w, "%s:%s%s", e->name, v[0] ? " " : "", v);
        for (const char *p = e->programs; p && *p && w > 0 && (size_t)w < len; p += strcspn(p, " "), p += *p == ' ') {
            char name[64], hash[33];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(p, " "), p);
            char *src = source_text(dev, name);
            if (src) clg__hash_hex(src, strlen(src), hash);
            else snprintf(hash, sizeof hash, "missing");
            free(src);
            w += snprintf(meta + w, len - (size_t)w, " %s %s", name, hash);
        }
        if (w > 0 && (size_t)w < len) w += snprintf(meta + w, len - (size_t)w, "\n");
    }
    if (w > 0 && (size_t)w < len)
        w += snprintf(meta + w, len - (size_t)w, "profile: %s\ncandidates:", flags & CLG_GEMM_TUNE_QUICK ? "quick" : "full");
    for (int i = 0; i < ncand && w > 0 && (size_t)w < len; i++)
        w += snprintf(meta + w, len - (size_t)w, " %s%s", cand[i].name, i + 1 < ncand ? "," : "");
    if (w > 0 && (size_t)w < len) snprintf(meta + w, len - (size_t)w, "\n");
}

void clg__gemm_cache_path(clg_device *dev, const char *meta, const char *ext, char *path, size_t len)
{
    const char *dir = clg_device_cache_dir(dev);
    char h[33];
    clg__hash_hex(meta, strlen(meta), h);
    if (dir) snprintf(path, len, "%s/gemm-%s.%s", dir, h, ext);
    else path[0] = 0;
}

/* The choice from the file: "choice: <name>" and "gflops: <rate>" after the meta. */
bool clg__gemm_cache_read(const char *path, const char *meta, clg_gemm_candidate *out, double *gflops)
{
    unsigned char *text = NULL;   /* a record is a few hundred bytes: anything else is a miss */
    size_t n = 0;
    if (clg__file_read(path, 8191, &text, &n, NULL, 0) != CLG_OK) return false;
    char buf[8192];
    memcpy(buf, text, n + 1);
    free(text);
    size_t ml = strlen(meta);
    if (n < ml || memcmp(buf, meta, ml) != 0) return false;
    char name[96];
    double rate;
    if (sscanf(buf + ml, "choice: %95[^\n]\ngflops: %lf\nend\n", name, &rate) != 2 || !(rate >= 0)) return false;
    clg_gemm_candidate c;
    if (!clg__gemm_candidate_parse(name, &c)) return false;
    if (!strstr(buf + ml, "\nend\n")) return false;
    *out = c;
    *gflops = rate;
    return true;
}

/* Written to a temporary beside it and renamed: readers see the old file or the new. */
bool clg__gemm_cache_write(const char *path, const char *meta, const clg_gemm_candidate *c, double gflops)
{
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return false;
    bool ok = fprintf(f, "%schoice: %s\ngflops: %.6g\nend\n", meta, c->name, gflops) > 0;
    ok = fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return false;
    }
    return true;
}

/* An exclusive lock on the .lock file beside path (waiting for it), held until the descriptor
 * closes; -1 where none can be had (then tuning goes on unlocked). */
int clg__gemm_cache_lock(const char *path)
{
    char lp[1300];   /* gemm-<key>.tune (.class) -> gemm-<key>.lock */
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
    snprintf(lp, sizeof lp, "%.*s.lock", (int)n, path);
    int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    while (fcntl(fd, F_SETLKW, &fl) != 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
}

